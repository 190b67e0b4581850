package goprotocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRead gives one batch of three records, then nothing.
type fakeRead struct{ given bool }

func (f *fakeRead) Next() ([]Record, any) {
	if f.given {
		time.Sleep(time.Millisecond)
		return nil, nil
	}
	f.given = true
	return []Record{{0, "a"}, {1, "b"}, {2, "c"}}, int64(3)
}

func (f *fakeRead) Close() {}

func consumeOnce(t *testing.T, bare bool) string {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	cmds := &Commands{Go: make(chan struct{}), Stop: make(chan struct{})}
	close(cmds.Go)
	done := make(chan error)
	go func() {
		done <- RunConsumer(Config{History: path, Partitions: 2, Bare: bare}, cmds,
			func(int32) (PartitionRead, error) { return &fakeRead{}, nil })
	}()
	time.Sleep(50 * time.Millisecond)
	close(cmds.Stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	return string(text)
}

// A recording consumer writes each batch's head and its records; a bare one reads the same and
// writes nothing.
func TestABareConsumerReadsAndRecordsNothing(t *testing.T) {
	recorded := strings.Split(strings.TrimSpace(consumeOnce(t, false)), "\n")
	if len(recorded) != 8 { // two partitions: a head and three records each
		t.Fatalf("%d lines: %v", len(recorded), recorded)
	}
	if bare := consumeOnce(t, true); bare != "" {
		t.Fatalf("a bare consumer wrote %q", bare)
	}
}

func TestARowIsWhatEncodingJSONWrites(t *testing.T) {
	values := []string{"p-1", "", "a b", "q\"uote", "back\\slash", "tab\there", "<html>&", "é", "\x00", "\u2028",
		"p-123456789", strings.Repeat("x", 300)}
	for i, v := range values {
		want, _ := json.Marshal([]any{int64(i) * 1_000_003, v})
		got := AppendRow(nil, int64(i)*1_000_003, v)
		if string(got) != string(want)+"\n" {
			t.Errorf("AppendRow(%q) = %q, encoding/json writes %q", v, got, want)
		}
		if bytes := AppendRow(nil, int64(i)*1_000_003, []byte(v)); string(bytes) != string(got) {
			t.Errorf("AppendRow of %q's bytes = %q, of the string %q", v, bytes, got)
		}
	}
	if got := string(AppendRow([]byte("head\n"), -1, "v")); got != "head\n[-1,\"v\"]\n" {
		t.Errorf("AppendRow appends: %q", got)
	}
}

func TestAHeadIsWhatEncodingJSONWrites(t *testing.T) {
	for _, hw := range []any{nil, int64(0), int64(1) << 40, int32(7), 9, 1.5, "x"} {
		want, _ := json.Marshal(map[string]any{"p": int32(2), "ts": int64(1795880000123), "hw": hw})
		if got := string(AppendHead(nil, 2, 1795880000123, hw)); got != string(want)+"\n" {
			t.Errorf("AppendHead(hw %v) = %q, encoding/json writes %q", hw, got, want)
		}
	}
}
