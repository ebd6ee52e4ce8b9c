package mcp

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestInProcessLogsReadFailureIs502: get_task_logs of a job whose site holds the
// output but fails to read it (the stdout path is a directory) is, over the
// in-process backend, the 502 "a site failed the request" — not the 503 "unavailable
// now … Retry" it was, which sends an agent retrying what fails again.
func TestInProcessLogsReadFailureIs502(t *testing.T) {
	c := coretest.Start(t, coretest.Options{SimSpeed: 60})
	env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	res, err := c.SubmitTask(context.Background(), core.SubmitRequest{Name: "logs502", Command: "echo mcp-logs", Envelope: &env})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	for i := 0; ; i++ { // bounded: 30 s
		td, err := c.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if td.State.Final() {
			break
		}
		if i > 300 {
			t.Fatalf("task did not finish: %s", td.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b := CoreBackend(c)
	l, err := b.TaskLogs(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l.StdoutPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(l.StdoutPath, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = b.TaskLogs(context.Background(), id, 0, 0)
	var ve *v1.Error
	if !errors.As(err, &ve) || ve.Status != http.StatusBadGateway {
		t.Fatalf("logs the site fails to read: %v, want a 502 problem", err)
	}
	if msg := actionable(err).Error(); !strings.HasPrefix(msg, "a site failed the request") || strings.Contains(msg, "Retry") {
		t.Errorf("the tool says %q", msg)
	}
}
