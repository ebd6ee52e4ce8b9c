package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The access log: one line per request, at the outermost layer (so refusals by the
// guard are logged too), with method, route (the mux pattern that matched, so ids do
// not multiply the routes), path (never the query: a login code or a token could
// travel there), status, bytes written, duration, user agent and remote address.
// Request headers are never logged: not Authorization, not Cookie. An answer of 500
// or more is logged at level ERROR with its cause (the error the core returned,
// redacted); others at INFO, and the scrapes of /healthz and /metrics at DEBUG.
// The same middleware feeds mosaic_http_request_duration_seconds.

// reqState is what a request's handlers tell the access log: the cause of a 5xx.
type reqState struct {
	cause error
	// pattern is the route the mux matched, recorded by notePattern: the guard hands
	// the mux a derived request (with the caller in its context), so r.Pattern is set
	// on that one, not on the request the access log holds.
	pattern string
}

// notePattern records the mux's matched pattern for the access log.
func notePattern(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if st, ok := r.Context().Value(reqStateKey{}).(*reqState); ok && r.Pattern != "" {
				st.pattern = r.Pattern
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type reqStateKey struct{}

// noteCause records why a request failed, for the access log line of its answer.
func noteCause(ctx context.Context, err error) {
	if st, ok := ctx.Value(reqStateKey{}).(*reqState); ok && st.cause == nil {
		st.cause = err
	}
}

// statusRecorder remembers the status and counts the bytes of an answer. It keeps
// the writer's optional abilities: Flush for event streams (the exchange's listen
// asserts http.Flusher) and Unwrap for http.ResponseController (deadlines).
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher.
func (w *statusRecorder) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap is for http.ResponseController.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// knownMethods bound the method label of the HTTP histogram (a request may carry any word).
var knownMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

// accessLog wraps the whole handler.
func (s *Server) accessLog(next http.Handler) http.Handler {
	log := s.opts.Logger
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reqState{}
		rec := &statusRecorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), reqStateKey{}, st))
		panicked := true
		defer func() {
			// r.Pattern is set by the mux on this request when a route matched.
			status := rec.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			if panicked {
				status = http.StatusInternalServerError
				noteCause(r.Context(), errors.New("the handler panicked (the stack is in the server's error log)"))
			}
			if r.Pattern == "" {
				r.Pattern = st.pattern
			}
			if r.Pattern == "" && status != http.StatusNotFound {
				// Refused before routing (the guard): name the route it would have taken.
				_, r.Pattern = s.mux.Handler(r)
			}
			method, route := routeOf(r)
			took := time.Since(start)
			s.httpDur.WithLabelValues(method, route, strconv.Itoa(status)).Observe(took.Seconds())
			attrs := []slog.Attr{
				slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
				slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Float64("duration_ms", float64(took.Microseconds())/1000),
				slog.String("user_agent", clip(r.UserAgent(), 256)), slog.String("remote", r.RemoteAddr),
			}
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
				cause := "(no cause recorded)"
				if st.cause != nil {
					cause = s.redact(st.cause.Error())
				}
				attrs = append(attrs, slog.String("err", cause))
			case r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/metrics"):
				level = slog.LevelDebug
			}
			log.LogAttrs(context.Background(), level, "http request", attrs...)
		}()
		next.ServeHTTP(rec, r)
		panicked = false
	})
}

// routeOf names a request's route for the log and the histogram: the pattern the mux
// matched without its method ("/api/tasks/{id}"), or "unmatched"; and the method,
// "OTHER" for a word outside the usual set (labels stay few whatever clients send).
func routeOf(r *http.Request) (method, route string) {
	method = r.Method
	if !knownMethods[method] {
		method = "OTHER"
	}
	route = r.Pattern
	if _, p, ok := strings.Cut(route, " "); ok {
		route = p
	}
	if route == "" {
		route = "unmatched"
	}
	return method, route
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// credentialText matches what may carry a credential inside an error text: a bearer
// value, a key=value or key: value pair whose key names a token, secret or password,
// and a URL's user-info password.
var credentialText = regexp.MustCompile(`(?i)(bearer\s+)[^\s,;"']+|((?:token|secret|password|passwd|api[_-]?key|code)\s*[=:]\s*)[^\s,;&"']+|(://[^/\s:@]*:)[^@/\s]+(@)`)

// redact removes credentials from a text bound for the log: the API token itself
// wherever it appears, and anything credentialText matches (one pass; the groups
// that did not take part in a match are empty).
func (s *Server) redact(text string) string {
	if tok := s.opts.Token; len(tok) >= 4 {
		text = strings.ReplaceAll(text, tok, "[redacted]")
	}
	return credentialText.ReplaceAllString(text, "${1}${2}${3}[redacted]${4}")
}
