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
for t in 0 1; do
  pgset kpktgend_$t rem_device_all
  pgset kpktgend_$t "add_device dummy0@$t"
  d=dummy0@$t
  pgset $d "count 100000"
  pgset $d "dst 10.0.0.2"
  pgset $d "dst_mac 52:54:00:12:34:56"
  pgset $d "flag NO_TIMESTAMP"
  pgset $d "imix_weights 64,7 576,4 1500,1"
done
echo start > $PG/pgctrl
for t in 0 1; do
  mark "dummy0@$t-imix-2threads"; cat $PG/dummy0@$t
done
echo "Device: dummy0@0"
grep -A2 "Result:" $PG/dummy0@0
mark end
poweroff -f
