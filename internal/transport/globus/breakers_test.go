package globus

import "testing"

// TestNoProcessWideBreaker: two transports of one endpoint built without a breaker
// set do not share a breaker, two sets do not share one, and one set does.
func TestNoProcessWideBreaker(t *testing.T) {
	const ep = "4b116d3c-1703-4f8f-9f6f-39921e5864df"
	a, b := New(ep, &Client{}), New(ep, &Client{})
	a.breaker().Trip("endpoint offline")
	if b.breaker().Open() {
		t.Fatal("a breaker tripped on one transport opened another's")
	}
	one, two := &Breakers{}, &Breakers{}
	if first, again := one.For(ep), one.For(ep); first != again {
		t.Fatal("one set hands out two breakers for one endpoint")
	}
	one.For(ep).Trip("offline")
	if two.For(ep).Open() {
		t.Fatal("a breaker tripped in one set opened the other set's")
	}
}
