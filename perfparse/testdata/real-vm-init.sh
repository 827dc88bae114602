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
mark kpktgend_0-initial; cat $PG/kpktgend_0
pgset kpktgend_0 rem_device_all
pgset kpktgend_0 "add_device dummy0"
mark kpktgend_0-after-add; cat $PG/kpktgend_0
mark dummy0-before-config; cat $PG/dummy0
pgset dummy0 "count 200000"
pgset dummy0 "pkt_size 60"
pgset dummy0 "dst 10.0.0.2"
pgset dummy0 "dst_mac 52:54:00:12:34:56"
pgset dummy0 "flag NO_TIMESTAMP"
mark dummy0-after-config; cat $PG/dummy0
echo "bogus_param 1" > $PG/dummy0
mark dummy0-bad-param; cat $PG/dummy0
pgset dummy0 "count 200000"
mark sample01
echo "Running... ctrl^C to stop"
echo start > $PG/pgctrl
echo "Done"
echo "Result device: dummy0"
cat $PG/dummy0
mark end
mark kpktgend_0-after-run; cat $PG/kpktgend_0
echo reset > $PG/pgctrl
for t in 0 1; do
  pgset kpktgend_$t rem_device_all
  pgset kpktgend_$t "add_device dummy0@$t"
  d=dummy0@$t
  pgset $d "flag QUEUE_MAP_CPU"
  pgset $d "count 100000"
  pgset $d "clone_skb 0"
  pgset $d "pkt_size 60"
  pgset $d "delay 0"
  pgset $d "flag NO_TIMESTAMP"
  pgset $d "dst_mac 90:e2:ba:ff:ff:ff"
  pgset $d "dst_min 198.18.0.42"
  pgset $d "dst_max 198.18.0.42"
  pgset $d "flag UDPSRC_RND"
  pgset $d "udp_src_min 9"
  pgset $d "udp_src_max 109"
done
mark sample02
echo "Running... ctrl^C to stop"
echo start > $PG/pgctrl
echo "Done"
for t in 0 1; do
  echo "Device: dummy0@$t"
  cat $PG/dummy0@$t | grep -A2 "Result:"
done
mark end
mark dummy0@1-after-multi; cat $PG/dummy0@1
pgset dummy0@0 "count 0"
pgset dummy0@1 "count 0"
(echo start > $PG/pgctrl) &
sleep 2
mark kpktgend_0-running; cat $PG/kpktgend_0
mark dummy0@0-running; cat $PG/dummy0@0
echo stop > $PG/pgctrl
wait
mark dummy0@0-stopped; cat $PG/dummy0@0
mark kpktgend_1-stopped; cat $PG/kpktgend_1
echo reset > $PG/pgctrl
pgset kpktgend_0 "add_device lo"
pgset lo "count 50000"
pgset lo "pkt_size 1500"
pgset lo "dst6 fd00::1"
pgset lo "flag IPV6"
echo start > $PG/pgctrl
mark lo-ipv6; cat $PG/lo
echo "burst 32" > $PG/lo
mark lo-burst; cat $PG/lo
mark netdev; cat /proc/net/dev
mark done
poweroff -f
