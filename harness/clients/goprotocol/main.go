package goprotocol

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Main runs the role the command line names (ROLE CONFIG.json) from roles, "check" among them:
// a role that fails exits 1 with its error, "check" exits 2 with the refusal (the harness shows its
// last line on stderr), a role not in roles exits 2 naming the allowed.
func Main(program string, roles map[string]func(path string) error) {
	names := SortedKeys(roles)
	if len(os.Args) < 3 {
		fmt.Fprintf(os.Stderr, "usage: %s %s CONFIG.json\n", program, strings.Join(names, "|"))
		os.Exit(2)
	}
	role, path := os.Args[1], os.Args[2]
	run, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: unknown role %q (allowed: %s)\n", program, role, strings.Join(names, ", "))
		os.Exit(2)
	}
	if err := run(path); err != nil {
		if role == "check" {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
}

// SortedKeys is a map's keys in order: the "allowed:" lists of a refusal.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
