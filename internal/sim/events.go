package sim

import (
	"container/heap"
	"time"
)

type evKind uint8

const (
	evArrival   evKind = iota // background arrival on part
	evJobEnd                  // a running job's planned end (walltime, runtime, injected failure)
	evNodeDown                // a node failure starts
	evNodeUp                  // failed nodes return
	evOutageEnd               // scheduling resumes
)

type event struct {
	at    time.Duration
	seq   uint64 // insertion order breaks ties deterministically
	kind  evKind
	part  *partition
	j     *job
	gen   uint32
	nodes []int // evNodeUp
	nf    int   // evNodeDown: index into cfg.NodeFailures
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(a, b int) bool {
	if h[a].at != h[b].at {
		return h[a].at < h[b].at
	}
	return h[a].seq < h[b].seq
}
func (h eventHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return e
}

func (c *Cluster) push(e *event) {
	c.seq++
	e.seq = c.seq
	heap.Push(&c.events, e)
}
