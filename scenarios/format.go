package scenarios

import (
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"
)

func validIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func validMAC(s string) bool {
	hw, err := net.ParseMAC(s)
	return err == nil && len(hw) == 6
}

// formatMemory prints MiB as the largest exact binary unit.
func formatMemory(mib int) string {
	if mib%1024 == 0 {
		return strconv.Itoa(mib/1024) + "GiB"
	}
	return strconv.Itoa(mib) + "MiB"
}

// formatCPUs prints a sorted CPU list in cpulist syntax ("0-3,6"), or
// "none" for nil.
func formatCPUs(cpus []int) string {
	if len(cpus) == 0 {
		return "none"
	}
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprintf(&b, "%d", cpus[i])
		}
		i = j + 1
	}
	return b.String()
}

// formatDuration prints a duration the way a scenario would write it.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	s := d.String()
	// "2m0s" -> "2m", "1h0m0s" -> "1h"
	for _, suf := range []string{"0s", "0m"} {
		if strings.HasSuffix(s, "m"+suf) || strings.HasSuffix(s, "h"+suf) {
			s = strings.TrimSuffix(s, suf)
		}
	}
	return s
}

// format prints a decoded value canonically, the inverse of decodeValue
// for scalar fields.
func format(v reflect.Value, tg *tags) string {
	kind := tg.Get("kind")
	if v.Type() == durationType {
		return formatDuration(time.Duration(v.Int()))
	}
	switch v.Kind() {
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Int {
			return formatCPUs(v.Interface().([]int))
		}
		if v.Type().Elem().Kind() == reflect.String {
			return strings.Join(v.Interface().([]string), ",")
		}
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int64:
		switch {
		case kind == "memory":
			return formatMemory(int(v.Int()))
		case kind == "queues" && v.Int() == 0:
			return "auto"
		case kind == "burst" && v.Int() < 0:
			return "default"
		}
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	}
	return fmt.Sprint(v.Interface())
}
