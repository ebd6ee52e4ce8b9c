package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// actionable rewrites a backend error into a message an agent can act on. Tool
// handlers return it as an error, which the SDK turns into an IsError tool result.
func actionable(err error) error {
	if err == nil {
		return nil
	}
	var ae *v1.Error
	switch {
	case errors.Is(err, v1.ErrNoCore):
		return fmt.Errorf("%w. Ask the user to run `mosaic serve` in a terminal (it keeps running), then call the tool again", err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the core did not answer in time (%w); it may be busy probing sites: retry in a few seconds", err)
	case errors.As(err, &ae):
		switch ae.Status {
		case http.StatusNotFound:
			return fmt.Errorf("not found: %s. list_tasks shows task ids, list_resources the systems", ae.Error())
		case http.StatusUnprocessableEntity, http.StatusBadRequest:
			return fmt.Errorf("refused: %s. Change the arguments as the message says and call again", ae.Error())
		case http.StatusConflict:
			return fmt.Errorf("conflict: %s", ae.Error())
		case http.StatusUnauthorized:
			return fmt.Errorf("%s. The token in $XDG_CONFIG_HOME/mosaic/token does not match the running core's; restart `mosaic mcp` after `mosaic serve` has created it", ae.Error())
		case http.StatusServiceUnavailable:
			return fmt.Errorf("unavailable now: %s. Retry in a little while: the core may still be running its first probe round, "+
				"or the site cannot be reached (list_resources shows each system's health)", ae.Error())
		case http.StatusBadGateway:
			return fmt.Errorf("a site failed the request: %s. list_resources shows the system's health; system_env probes its login node", ae.Error())
		}
		return fmt.Errorf("the core answered %d: %s", ae.Status, ae.Error())
	}
	return err
}

// invalid is an argument error found before calling the core.
func invalid(format string, args ...any) error {
	return fmt.Errorf("invalid arguments: "+format, args...)
}
