package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"
)

func request(apiKey int16, corr int32, body int) []byte {
	b := make([]byte, 12+body)
	binary.BigEndian.PutUint32(b[0:4], uint32(8+body))
	binary.BigEndian.PutUint16(b[4:6], uint16(apiKey))
	binary.BigEndian.PutUint16(b[6:8], 3)
	binary.BigEndian.PutUint32(b[8:12], uint32(corr))
	return b
}

func answer(corr int32, body int) []byte {
	b := make([]byte, 8+body)
	binary.BigEndian.PutUint32(b[0:4], uint32(4+body))
	binary.BigEndian.PutUint32(b[4:8], uint32(corr))
	for i := 8; i < len(b); i++ {
		b[i] = byte(corr)
	}
	return b
}

// chunks cuts data at random places, as a TCP stream arrives.
func chunks(rng *rand.Rand, data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n := 1 + rng.Intn(20)
		if n > len(data) {
			n = len(data)
		}
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

func TestTheAnswerToAMarkedRequestIsLostAndNothingAfterIt(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		name := fmt.Sprintf("%s-%d", t.Name(), seed)
		tracker := &KafkaRequests{Pair: name, APIKey: 27}
		rs := tracker.NewState().(*requestState)
		as := (&KafkaAnswers{Pair: name}).NewState().(*answerState)
		var reqs []byte
		for i, k := range []int16{1, 27, 1, 0} { // fetch, WriteTxnMarkers, fetch, produce
			reqs = append(reqs, request(k, int32(10+i), rng.Intn(30))...)
		}
		for _, c := range chunks(rng, reqs) {
			tracker.read(rs, c)
		}
		if tracker.Marked != 1 {
			t.Fatalf("seed %d: marked %d requests, want 1", seed, tracker.Marked)
		}
		before := append(answer(10, rng.Intn(30)), answer(12, 0)...) // answers may come in any order
		all := append(append([]byte(nil), before...), answer(11, 1+rng.Intn(30))...)
		all = append(all, answer(13, 5)...)
		var got []byte
		lost := false
		for _, c := range chunks(rng, all) {
			out, l := as.filter(c)
			got = append(got, out...)
			if l {
				lost = true
				as.p.lost()
				break
			}
		}
		if !lost || !bytes.Equal(got, before) {
			t.Fatalf("seed %d: lost %v, passed on %v, want %v", seed, lost, got, before)
		}
		if tracker.Lost != 1 {
			t.Fatalf("seed %d: lost counted %d", seed, tracker.Lost)
		}
	}
}

func TestUnarmedEverythingGoesOnByteForByte(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	tracker := &KafkaRequests{Pair: "unarmed", APIKey: unarmed}
	rs := tracker.NewState().(*requestState)
	as := (&KafkaAnswers{Pair: "unarmed"}).NewState().(*answerState)
	var reqs, answers []byte
	for i := 0; i < 50; i++ {
		reqs = append(reqs, request(int16(rng.Intn(30)), int32(i), rng.Intn(100))...)
		answers = append(answers, answer(int32(i), rng.Intn(100))...)
	}
	for _, c := range chunks(rng, reqs) {
		tracker.read(rs, c)
	}
	var got []byte
	for _, c := range chunks(rng, answers) {
		out, lost := as.filter(c)
		if lost {
			t.Fatal("nothing armed, nothing lost")
		}
		got = append(got, out...)
	}
	if tracker.Marked != 0 || !bytes.Equal(got, answers) {
		t.Fatalf("marked %d; passed on %d of %d bytes", tracker.Marked, len(got), len(answers))
	}
}

func TestEachConnectionsHalvesArePairedInTheOrderTheyStart(t *testing.T) {
	tracker := &KafkaRequests{Pair: "order", APIKey: 27}
	up := []*requestState{tracker.NewState().(*requestState)}
	down := []*answerState{(&KafkaAnswers{Pair: "order"}).NewState().(*answerState)}
	up = append(up, tracker.NewState().(*requestState))
	down = append(down, (&KafkaAnswers{Pair: "order"}).NewState().(*answerState))
	tracker.read(up[1], request(27, 5, 0))
	if _, lost := down[0].filter(answer(5, 0)); lost {
		t.Fatal("the first connection's answer 5 was lost for the second's request 5")
	}
	if _, lost := down[1].filter(answer(5, 0)); !lost {
		t.Fatal("the second connection's answer 5 went on")
	}
}
