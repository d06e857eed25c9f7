package store

import "sync"

// docCache holds the documents of recently read resources. A large route
// table is ~150 KB of JSON: reading it from SQLite and copying it costs
// more than the rest of a GET, and a controller reads the same table again
// and again.
type docCache struct {
	mu sync.Mutex
	m  map[string]cachedDoc
}

type cachedDoc struct {
	rev int64
	doc []byte // never modified: readers only send it
}

// maxCachedDocs bounds the cache; past it, the cache starts over.
const maxCachedDocs = 512

func (c *docCache) get(k string, rev int64) ([]byte, bool) {
	if rev == 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[k]
	if !ok || d.rev != rev {
		return nil, false
	}
	return d.doc, true
}

func (c *docCache) put(k string, rev int64, doc []byte) {
	if rev == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedDocs {
		c.m = make(map[string]cachedDoc)
	}
	c.m[k] = cachedDoc{rev: rev, doc: doc}
}
