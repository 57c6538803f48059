package run

import (
	"errors"
	"strconv"
	"strings"
)

// ParseShard parses a shard as --shard takes it and a sharded report
// records it, I/N with 1 <= I <= N.
func ParseShard(s string) (i, n int, err error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, errors.New("want I/N with 1 <= I <= N, for example 2/3")
	}
	return i, n, nil
}
