package goprotocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every send is one row in sequence order, across chunks, with its promise's offset or error, and
// none for a send whose promise never came.
func TestTheHistoryHasARowPerSendInOrder(t *testing.T) {
	l := &SendLog{}
	n := 1<<chunkBits + 5
	sends := make([]*Send, n)
	for i := range sends {
		sends[i] = l.Add(int32(i % 3))
	}
	for i, s := range sends {
		switch {
		case i == 7:
			l.Done(s, -1, "NOT_ENOUGH_REPLICAS: x")
		case i != n-1:
			l.Done(s, int64(i/3), "")
		}
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := l.Write(path); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	if len(lines) != n || l.Acked.Load() != int64(n-2) {
		t.Fatalf("%d rows, %d acked", len(lines), l.Acked.Load())
	}
	var row []any
	json.Unmarshal([]byte(lines[1<<chunkBits+1]), &row)
	if row[0].(float64) != float64(1<<chunkBits+1) || row[4].(float64) != float64((1<<chunkBits+1)/3) {
		t.Fatalf("a later chunk's row: %s", lines[1<<chunkBits+1])
	}
	json.Unmarshal([]byte(lines[7]), &row)
	if row[4] != nil || row[5] != "NOT_ENOUGH_REPLICAS: x" {
		t.Fatalf("a failed send: %s", lines[7])
	}
	json.Unmarshal([]byte(lines[n-1]), &row)
	if row[3] != nil || row[4] != nil || row[5] != nil {
		t.Fatalf("a send without a promise: %s", lines[n-1])
	}
}

func TestATransactionWithAFailedSendIsSaidToHaveFailed(t *testing.T) {
	log := &TxnLog{Name: "t"}
	row := log.Begin()
	txn := row["txn"].(string)
	log.Send("t-0", "chaos", 0, txn, nil, nil)(3, "")
	if log.Failed(txn) {
		t.Fatal("every send acknowledged: not failed")
	}
	log.Send("t-1", "chaos", 1, txn, nil, nil)(-1, "broker closed the connection")
	if !log.Failed(txn) {
		t.Fatal("a send failed: the transaction must be aborted, not committed")
	}
	if next := log.Begin()["txn"].(string); log.Failed(next) {
		t.Fatal("the next transaction has no failed send")
	}
}
