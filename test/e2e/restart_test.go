package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondCoreOnSameStoreRefuses: a second `mosaic serve` on the same MOSAIC_DB (on
// another port) exits non-zero naming the first core's PID and address and what to
// do; once the first is killed with SIGKILL (its lock file left behind), a new core
// starts on the store.
func TestSecondCoreOnSameStoreRefuses(t *testing.T) {
	e := newEnv(t)
	first := e.serve("--headless")

	other := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--headless", "--addr", other)
	cmd.Env, cmd.Dir = e.vars, e.home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the second core did not exit within 60s (it should refuse the store):\n%s", out.String())
	}
	if err == nil {
		t.Fatalf("the second core on the same store exited 0:\n%s", out.String())
	}
	msg := out.String()
	for _, want := range []string{"in use by another Mosaic core", "PID " + strconv.Itoa(first.Process.Pid), e.addr, "MOSAIC_DB"} {
		if !strings.Contains(msg, want) {
			t.Errorf("second core's output does not mention %q:\n%s", want, msg)
		}
	}
	if code, _ := httpGet("http://"+other+"/healthz", ""); code == 200 {
		t.Errorf("the refused core is serving on %s", other)
	}
	if code, _ := httpGet("http://"+e.addr+"/healthz", ""); code != 200 {
		t.Errorf("the first core stopped answering (%d) after the second was refused", code)
	}

	// kill -9: no cleanup; the kernel drops the flock, the lock file stays.
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = first.Process.Wait()
	e2 := *e
	e2.addr = other
	e2.serve("--headless") // fails the test if it does not become healthy
}

// sideEffects counts lines per task label in the side-effect file.
func sideEffects(text string) map[string]int {
	n := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			n[f[0]]++
		}
	}
	return n
}

var _ = fmt.Sprintf
