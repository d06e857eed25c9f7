package armtemplate

import (
	"crypto/sha1"
	"math/bits"
	"strings"
)

// uniqueString is ARM's uniqueString(): the arguments joined with "-", hashed
// with the 64-bit MurmurHash variant of Azure's resource stack (two 32-bit
// lanes with MurmurHash3's constants, seed 0), and the hash's top 65 bits
// written as 13 base32 characters (RFC 4648 lower-case alphabet), most
// significant first. Checked against input/output pairs observed on Azure
// (see hash_test.go).
func uniqueString(parts []string) string {
	h := murmur64([]byte(strings.Join(parts, "-")))
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var out [13]byte
	for i := range out {
		out[i] = alphabet[h>>59]
		h <<= 5
	}
	return string(out[:])
}

func murmur64(data []byte) uint64 {
	const (
		c1 = 0x239b961b
		c2 = 0xab0e9789
	)
	var h1, h2 uint32
	le32 := func(b []byte) uint32 {
		var v uint32
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint32(b[i])
		}
		return v
	}
	i := 0
	for ; i+8 <= len(data); i += 8 {
		k1, k2 := le32(data[i:i+4]), le32(data[i+4:i+8])
		k1 *= c1
		k1 = bits.RotateLeft32(k1, 15)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft32(h1, 19)
		h1 += h2
		h1 = h1*5 + 0x561ccd1b

		k2 *= c2
		k2 = bits.RotateLeft32(k2, 17)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft32(h2, 13)
		h2 += h1
		h2 = h2*5 + 0x0bcaa747
	}
	if tail := data[i:]; len(tail) > 0 {
		n := min(len(tail), 4)
		k1 := le32(tail[:n])
		k1 *= c1
		k1 = bits.RotateLeft32(k1, 15)
		k1 *= c2
		h1 ^= k1
		if len(tail) > 4 {
			k2 := le32(tail[4:])
			k2 *= c2
			k2 = bits.RotateLeft32(k2, 17)
			k2 *= c1
			h2 ^= k2
		}
	}
	h1 ^= uint32(len(data))
	h2 ^= uint32(len(data))
	h1 += h2
	h2 += h1
	h1 = fmix32(h1)
	h2 = fmix32(h2)
	h1 += h2
	h2 += h1
	return uint64(h2)<<32 | uint64(h1)
}

func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// guidNamespace is the namespace ARM's guid() derives its name-based UUIDs
// from.
var guidNamespace = [16]byte{0x11, 0xfb, 0x06, 0xfb, 0x71, 0x2d, 0x4d, 0xdd, 0x98, 0xc7, 0xe7, 0x1b, 0xbd, 0x58, 0x88, 0x30}

// armGUID is ARM's guid(): an RFC 4122 version 5 (SHA-1, name-based) UUID of
// the arguments joined with "-" (UTF-8) in the namespace
// 11fb06fb-712d-4ddd-98c7-e71bbd588830.
func armGUID(parts []string) string {
	return nameUUID(guidNamespace, strings.Join(parts, "-"))
}

// nameUUID is an RFC 4122 version 5 UUID of name in namespace ns.
func nameUUID(ns [16]byte, name string) string {
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(name))
	sum := h.Sum(nil)
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b.WriteByte('-')
		}
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func fnUniqueString(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	return uniqueString(ss), nil
}

func fnGUID(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	return armGUID(ss), nil
}
