package keys

import "strings"

// SlotCount is the number of hash slots in a Redis Cluster.
const SlotCount = 16384

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the key's hash tag
// (the text between the first '{' and the next '}', when that text is not empty) or of the
// whole key, modulo 16384.
func Slot(key string) uint16 {
	if start := strings.IndexByte(key, '{'); start >= 0 {
		if end := strings.IndexByte(key[start+1:], '}'); end > 0 {
			key = key[start+1 : start+1+end]
		}
	}
	return crc16(key) % SlotCount
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster
// uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
