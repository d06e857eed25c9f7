package store

import (
	"context"
	"fmt"
	"sync"
)

// Version returns a value that changes whenever any process writes a
// virtual network or route table (every write gives the row a new random
// rev). A poller compares it to the last one it saw to learn that it must
// read Networks again, also when another process wrote the state file.
func (s *Store) Version(ctx context.Context) (string, error) {
	var n, sum int64
	err := s.Read(ctx, func(tx *Txn) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(rev % 1000000007), 0) FROM resources`).Scan(&n, &sum)
	})
	if err != nil {
		return "", fmt.Errorf("reading the state version: %w", err)
	}
	return fmt.Sprintf("%d:%d", n, sum), nil
}

// Subscribe returns a channel that receives a value after writes that this
// Store committed (several writes may share one value), and a function
// that ends the subscription. Writes of other processes on the same file
// are not announced: poll Version for those.
func (s *Store) Subscribe() (<-chan struct{}, func()) { return s.written.subscribe() }

// writeNotifier wakes subscribers without ever blocking a writer.
type writeNotifier struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (w *writeNotifier) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == nil {
		w.subs = map[chan struct{}]struct{}{}
	}
	w.subs[ch] = struct{}{}
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs, ch)
	}
}

func (w *writeNotifier) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}
