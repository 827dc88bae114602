package perfparse

import "bytes"

// iperf3 has printed numbers JSON does not allow, and public harnesses
// patch them with sed before they parse:
//
//   - "lost_percent": -nan (or nan) where a UDP interval received
//     nothing: lost/total is 0/0 (iperf 3.0.11, esnet/iperf#364; 3.1b3,
//     #826); "jitter_ms" likewise;
//   - "bits_per_second": 5.924e 06, a blank for the exponent's sign
//     (iperf 3.1.2, esnet/iperf#520).
//
// nanKeys are the members whose nan means "undefined" and is read as an
// absent value; a nan anywhere else is an error naming the member, never a
// silent zero.
var nanKeys = map[string]bool{"lost_percent": true, "jitter_ms": true}

// repairIperf3JSON rewrites those numbers: nan of a nanKeys member becomes
// null, "<digit>e <digit>" becomes "<digit>e+<digit>". Newlines are kept,
// so error line numbers stay right. Text inside strings is left alone.
func repairIperf3JSON(data []byte) ([]byte, error) {
	out := make([]byte, 0, len(data))
	var key []byte // the last member name read
	line := 1
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line++
		case c == '"':
			end := stringEnd(data, i)
			s := data[i+1 : max(i+1, end-1)]
			if j := skipBlank(data, end); j < len(data) && data[j] == ':' {
				key = s
			}
			out = append(out, data[i:end]...)
			i = end - 1
			continue
		case c == 'e' && i > 0 && isDigit(data[i-1]) && i+2 < len(data) && data[i+1] == ' ' && isDigit(data[i+2]):
			out = append(out, 'e', '+')
			i++
			continue
		case c == '-' || c == 'n' || c == 'N' || c == 'i' || c == 'I':
			if w := nonFinite(data[i:]); w > 0 {
				if !nanKeys[string(key)] {
					return nil, errorf(line, "iperf3 printed %q for %q, which is not a JSON number; only lost_percent and jitter_ms may be undefined", data[i:i+w], key)
				}
				out = append(out, "null"...)
				i += w - 1
				continue
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// stringEnd returns the index after the JSON string starting at data[i]
// ('"'), or len(data) when it does not end.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

func skipBlank(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// nonFinite returns the length of a C printf nan/inf ("nan", "-nan",
// "inf", "-inf", "NaN", "Infinity", ...) at the start of b that is a whole
// token, or 0.
func nonFinite(b []byte) int {
	n := 0
	if len(b) > 0 && b[0] == '-' {
		n = 1
	}
	for _, w := range []string{"nan", "infinity", "inf"} {
		if len(b) >= n+len(w) && bytes.EqualFold(b[n:n+len(w)], []byte(w)) &&
			(len(b) == n+len(w) || !isWordByte(b[n+len(w)])) {
			return n + len(w)
		}
	}
	return 0
}

func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z'
}
