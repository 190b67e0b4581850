package goprotocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A member assigned nothing (more members than partitions) writes an empty list, which the harness
// reads as a set of partitions; null broke it.
func TestAnEmptyAssignmentIsAnEmptyList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	out, err := OpenMemberOut(path)
	if err != nil {
		t.Fatal(err)
	}
	out.Rebalance("assign", nil, 1)
	out.Rebalance("revoke", []int32{2, 0}, 1)
	out.Close()
	text, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if ps, ok := first["partitions"].([]any); !ok || len(ps) != 0 {
		t.Fatalf("an empty assignment: %s", lines[0])
	}
	if ps := second["partitions"].([]any); ps[0].(float64) != 0 || ps[1].(float64) != 2 {
		t.Fatalf("partitions in order: %s", lines[1])
	}
}

// A member that joins again within the same generation (sarama's Consume after an error) reads a
// partition it returned from again from the committed offset: a new reader each time, so going
// back there is not a consumer moving backwards.
func TestAReaderIsRenamedOnEveryAssignmentThatGivesBackAPartition(t *testing.T) {
	r := NewReaders("g-2")
	r.Assigned([]int32{2})
	if got := r.Returned(2); got != "g-2" {
		t.Fatalf("first assignment: %s", got)
	}
	r.Assigned([]int32{2}) // the same generation again
	if got := r.Returned(2); got != "g-2/2" {
		t.Fatalf("second assignment of a partition returned from: %s", got)
	}
	r.Assigned([]int32{0}) // a partition not returned from: the name stays
	if got := r.Returned(0); got != "g-2/2" {
		t.Fatalf("an assignment of new partitions: %s", got)
	}
	r.Assigned([]int32{2, 0})
	if got := r.Returned(2); got != "g-2/4" {
		t.Fatalf("third time back: %s", got)
	}
}
