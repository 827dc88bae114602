#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
insmod /m/dummy.ko numdummies=1
insmod /m/pktgen.ko
ip link set lo up
ip link set dummy0 up
PG=/proc/net/pktgen
mark() { echo "=====$1====="; }
pgset() { echo "$2" > $PG/$1; }
pgset kpktgend_0 rem_device_all
pgset kpktgend_1 rem_device_all
pgset kpktgend_0 "add_device dummy0"
pgset dummy0 "count 200000"
pgset dummy0 "dst 10.0.0.2"
pgset dummy0 "dst_mac 52:54:00:12:34:56"
pgset dummy0 "flag NO_TIMESTAMP"
pgset dummy0 "imix_weights 64,7 576,4 1500,1"
mark dummy0-imix-after-config; cat $PG/dummy0
echo start > $PG/pgctrl
mark dummy0-imix-run1; cat $PG/dummy0
echo start > $PG/pgctrl
mark dummy0-imix-run2-same-weights; cat $PG/dummy0
pgset dummy0 "clone_skb 10"
mark dummy0-imix-clone-skb; cat $PG/dummy0
pgset dummy0 "clone_skb 0"
pgset dummy0 "imix_weights 60,1 1514,1"
pgset dummy0 "count 0"
(sleep 3; echo stop > $PG/pgctrl) &
echo start > $PG/pgctrl
wait
mark dummy0-imix-count0-stopped; cat $PG/dummy0
mark end
poweroff -f
