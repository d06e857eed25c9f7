// Package watchlist is a list one goroutine appends to while a test waits
// for what it wants to appear in it (a controller's results, as its
// Reporter sees them). A waiter wakes at each append instead of polling,
// so in a synctest bubble it blocks durably and the bubble's clock moves
// on while it waits.
package watchlist

import "sync"

// List is safe for concurrent use. Its zero value is empty and ready to
// use.
type List[T any] struct {
	mu    sync.Mutex
	items []T
	next  chan struct{} // closed by the next Add; nil until asked for
}

// Add appends v and wakes whoever waits for the next item.
func (l *List[T]) Add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
	if l.next != nil {
		close(l.next)
		l.next = nil
	}
}

// Watch returns the items so far and a channel closed by the next Add.
func (l *List[T]) Watch() ([]T, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next == nil {
		l.next = make(chan struct{})
	}
	return append([]T(nil), l.items...), l.next
}

// All returns the items so far.
func (l *List[T]) All() []T {
	items, _ := l.Watch()
	return items
}
