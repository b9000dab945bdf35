package index

import (
	"sync"
	"sync/atomic"
)

// DefaultCacheBytes bounds the decoded-node cache of each Tree.
const DefaultCacheBytes = 64 << 20

const cacheShards = 16

// nodeCache holds decoded nodes keyed by (file generation, offset). Nodes
// are immutable and never rewritten in place, so entries never need
// invalidating; a new file (after Rebuild, compaction or a Refresh that
// reopened the path) gets a new generation and the old entries simply age
// out. Eviction is CLOCK (second chance) per shard: a hit only sets a bit
// under a read lock, so concurrent readers do not serialise.
type nodeCache struct {
	shards [cacheShards]cacheShard
	bytes  atomic.Int64
	budget int64
}

type cacheKey struct{ gen, off uint64 }

type cacheShard struct {
	mu    sync.RWMutex
	m     map[cacheKey]int32 // index into ring
	ring  []cacheSlot
	free  []int32
	hand  int
	bytes int64
}

type cacheSlot struct {
	key  cacheKey
	n    *node // nil: free slot
	size int64
	ref  uint32 // accessed atomically under the read lock
}

func newNodeCache(budget int64) *nodeCache {
	c := &nodeCache{budget: budget}
	for i := range c.shards {
		c.shards[i].m = map[cacheKey]int32{}
	}
	return c
}

func (c *nodeCache) shard(k cacheKey) *cacheShard {
	h := (k.off>>4)*0x9E3779B97F4A7C15 ^ k.gen*0xC2B2AE3D27D4EB4F
	return &c.shards[h>>60]
}

func (c *nodeCache) get(gen, off uint64) *node {
	k := cacheKey{gen, off}
	s := c.shard(k)
	s.mu.RLock()
	var n *node
	if i, ok := s.m[k]; ok {
		sl := &s.ring[i]
		n = sl.n
		if atomic.LoadUint32(&sl.ref) == 0 {
			atomic.StoreUint32(&sl.ref, 1)
		}
	}
	s.mu.RUnlock()
	return n
}

func (c *nodeCache) add(gen, off uint64, n *node) {
	k := cacheKey{gen, off}
	size := n.memSize()
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok || size > c.budget/cacheShards {
		return
	}
	// The budget is global (shards fill unevenly); evict from this shard.
	for c.bytes.Load()+size > c.budget && len(s.m) > 0 {
		c.bytes.Add(-s.evictOne())
	}
	var i int32
	if l := len(s.free); l > 0 {
		i = s.free[l-1]
		s.free = s.free[:l-1]
	} else {
		s.ring = append(s.ring, cacheSlot{})
		i = int32(len(s.ring) - 1)
	}
	s.ring[i] = cacheSlot{key: k, n: n, size: size}
	s.m[k] = i
	s.bytes += size
	c.bytes.Add(size)
}

// evictOne removes one entry (CLOCK) and returns its size. The caller holds
// the write lock and knows the shard is not empty.
func (s *cacheShard) evictOne() int64 {
	for {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		i := s.hand
		s.hand++
		sl := &s.ring[i]
		if sl.n == nil {
			continue
		}
		if sl.ref != 0 {
			sl.ref = 0
			continue
		}
		size := sl.size
		delete(s.m, sl.key)
		s.bytes -= size
		*sl = cacheSlot{}
		s.free = append(s.free, int32(i))
		return size
	}
}
