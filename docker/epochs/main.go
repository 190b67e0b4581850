// kchaos-epochs drives a transactional.id's producer epoch up to a given value before a run, by
// InitProducerId requests to its transaction coordinator: each one fences the producer before it and
// bumps the epoch by one (the coordinator writes each to __transaction_state). A run's transactional
// producer then starts a few hundred commits short of the epoch's limit (32767), which transactions
// version 2 reaches one commit or abort at a time; the coordinator must then give the producer a new
// producer id (KAFKA-18660, KAFKA-20090). Without it the limit is 32,767 transactions away.
//
//	kchaos-epochs -bootstrap HOST:PORT -transactional-id ID -to EPOCH [-timeout 10m]
//
// It prints one JSON line: the producer id and epoch it left, the requests it made and the seconds
// they took; it exits 1 with the coordinator's error when one is not retriable.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type result struct {
	ProducerID int64   `json:"producer_id"`
	Epoch      int16   `json:"epoch"`
	Requests   int     `json:"requests"`
	Seconds    float64 `json:"seconds"`
}

func main() {
	bootstrap := flag.String("bootstrap", "", "a broker's address")
	id := flag.String("transactional-id", "", "the transactional.id whose epoch is driven up")
	to := flag.Int("to", 0, "the epoch to stop at (1 to 32766)")
	timeout := flag.Duration("timeout", 10*time.Minute, "how long it may take")
	flag.Parse()
	if *bootstrap == "" || *id == "" || *to < 1 || *to > 32766 {
		fmt.Fprintln(os.Stderr, "usage: kchaos-epochs -bootstrap HOST:PORT -transactional-id ID -to EPOCH (1 to 32766)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(*bootstrap))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	r, err := drive(ctx, cl, *id, int16(*to))
	if err != nil {
		fail(err)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "kchaos-epochs: %v\n", err)
	os.Exit(1)
}

// drive asks for the transactional.id's producer id until the epoch it answers is ``to`` or more.
func drive(ctx context.Context, cl *kgo.Client, id string, to int16) (result, error) {
	t0 := time.Now()
	r := result{ProducerID: -1, Epoch: -1}
	for r.Epoch < to {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 60000
		resp, err := req.RequestWith(ctx, cl)
		r.Requests++
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		var ke *kerr.Error
		switch {
		case err == nil:
			r.ProducerID, r.Epoch = resp.ProducerID, resp.ProducerEpoch
		case errors.As(err, &ke) && ke.Retriable:
			time.Sleep(10 * time.Millisecond) // a coordinator loading or moving, a transaction still completing
		default:
			return r, fmt.Errorf("InitProducerId for %s after %d requests: %w", id, r.Requests, err)
		}
	}
	r.Seconds = time.Since(t0).Seconds()
	return r, nil
}
