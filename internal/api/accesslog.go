package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/core"
)

// The access log: one line per request, at the outermost layer (so refusals by the
// guard are logged too), with method, route (the mux pattern that matched, so ids do
// not multiply the routes), path (never the query: a login code or a token could
// travel there), status, bytes written, duration, user agent and remote address.
// Request headers are never logged: not Authorization, not Cookie. An answer of 500
// or more is logged at level ERROR with its cause (the error the core returned,
// redacted); others at INFO, and the scrapes of /healthz and /metrics at DEBUG.
// The same middleware feeds mosaic_http_request_duration_seconds.

// reqState is what a request's handlers tell the access log: the cause of a 5xx,
// and the route when a sub-router chose it.
type reqState struct {
	cause error
	route string
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

// longPolls are routes whose answer waits for something to happen (the exchange's
// blocking receive): like event streams, which are recognised by their content type,
// their duration is the client's wait, not the server's work, so the HTTP histogram
// leaves them out (the access log keeps them).
var longPolls = map[string]bool{"GET " + ExchangePrefix + "/message": true, "GET " + ExchangePrefix + "/mailbox/listen": true}

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
			var pv any // what the handler panicked with; nil for runtime.Goexit
			if panicked {
				pv = recover()
			}
			// r.Pattern is set by the mux on this request when a route matched.
			status := rec.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			if panicked {
				// The cause and where it happened, at ERROR: net/http's own report of
				// the panic goes to the server's ErrorLog at DEBUG.
				status = http.StatusInternalServerError
				switch pv {
				case nil:
					st.cause = errors.New("the handler's goroutine exited (runtime.Goexit)")
				case http.ErrAbortHandler:
					// A deliberate abort, which net/http ends quietly: no panic report.
					st.cause = errors.New("the handler aborted the answer (http.ErrAbortHandler)")
				default:
					msg := s.redact(fmt.Sprint(pv))
					st.cause = fmt.Errorf("the handler panicked: %s", msg)
					log.LogAttrs(context.Background(), slog.LevelError, "http handler panicked",
						slog.String("method", r.Method), slog.String("path", s.redact(r.URL.Path)),
						slog.String("panic", msg), slog.String("stack", s.redact(string(debug.Stack()))))
				}
			}
			if r.Pattern == "" {
				r.Pattern = st.pattern
			}
			if r.Pattern == "" && status != http.StatusNotFound {
				// Refused before routing (the guard): name the route it would have taken.
				_, r.Pattern = s.mux.Handler(r)
			}
			method, route := routeOf(r)
			if st.route != "" {
				route = st.route // a sub-router's own pattern (the exchange's)
			}
			took := time.Since(start)
			streamed := strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") || longPolls[r.Method+" "+route]
			if !streamed {
				s.httpDur.WithLabelValues(method, route, strconv.Itoa(status)).Observe(took.Seconds())
			}
			attrs := []slog.Attr{
				slog.String("method", r.Method), slog.String("route", route), slog.String("path", s.redact(r.URL.Path)),
				slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Float64("duration_ms", float64(took.Microseconds())/1000),
				slog.String("user_agent", s.redact(clip(r.UserAgent(), 256))), slog.String("remote", r.RemoteAddr),
			}
			level := slog.LevelInfo
			healthz := r.Method == http.MethodGet && r.URL.Path == "/healthz"
			switch {
			case healthz && status == http.StatusServiceUnavailable:
				// Not ready: expected while the first probe round runs (DEBUG), worth a
				// look otherwise (WARN); not a server error either way.
				level = slog.LevelWarn
				if errors.Is(st.cause, core.ErrNotReady) {
					level = slog.LevelDebug
				}
				attrs = append(attrs, slog.String("err", s.causeText(st.cause)))
			case status >= 500:
				level = slog.LevelError
				attrs = append(attrs, slog.String("err", s.causeText(st.cause)))
			case status == StatusClientClosed:
				attrs = append(attrs, slog.String("err", s.causeText(st.cause))) // INFO: the client went away
			case healthz || (r.Method == http.MethodGet && r.URL.Path == "/metrics"):
				level = slog.LevelDebug
			}
			log.LogAttrs(context.Background(), level, "http request", attrs...)
			if pv != nil {
				panic(pv) // net/http ends the connection, as it would have
			}
		}()
		next.ServeHTTP(rec, r)
		panicked = false
	})
}

// causeText is the logged cause of a failed request, redacted.
func (s *Server) causeText(err error) string {
	if err == nil {
		return "(no cause recorded)"
	}
	return s.redact(err.Error())
}

// noteRoute names a request's route from a sub-router (the exchange's mux), for the
// access log and the histogram.
func noteRoute(ctx context.Context, route string) {
	if st, ok := ctx.Value(reqStateKey{}).(*reqState); ok {
		st.route = route
	}
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

// credentialText matches what may carry a credential inside a text bound for the log.
// Each alternative is a kept prefix (group 2k-1) and the value (group 2k) that becomes
// [redacted]:
//   - an Authorization header's value, with its scheme kept (Bearer, Basic, ...);
//   - a bearer value anywhere;
//   - a key naming a token, secret, password or API key (also inside a longer name:
//     access_token, client_secret, PGPASSWORD; also quoted, as JSON writes it),
//     then = or :, then the value: quoted ("…", '…', up to the closing quote, spaces
//     included) or bare;
//   - a code= query parameter (a login code): only after ? or &, so "exit code: 137"
//     keeps its number;
//   - a URL's user-info password (scheme://user:PASSWORD@host).
var credentialText = regexp.MustCompile(`(?i)` +
	`(authorization["']?\s*[=:]\s*["']?(?:(?:bearer|basic|digest|negotiate|token)\s+)?)([^\s,;"']+)` +
	`|(bearer\s+)([^\s,;"']+)` +
	`|((?:token|secret|password|passwd|api[_-]?key)["']?\s*[=:]\s*)("[^"]*"?|'[^']*'?|[^\s,;&"'}]+)` +
	`|([?&]code=)([^\s&#"']+)` +
	`|(://[^/\s:@]*:)([^@/\s]+@)`)

// redact removes credentials from a text bound for the log: the API token itself
// wherever it appears, and the value of whatever credentialText matches (a quoted
// value keeps its quotes, a URL's user-info its @).
func (s *Server) redact(text string) string {
	if tok := s.opts.Token; len(tok) >= 4 {
		text = strings.ReplaceAll(text, tok, "[redacted]")
	}
	var b strings.Builder
	last := 0
	for _, m := range credentialText.FindAllStringSubmatchIndex(text, -1) {
		for i := 2; i+3 < len(m); i += 4 {
			if m[i] < 0 {
				continue // this alternative did not match
			}
			v := text[m[i+2]:m[i+3]]
			b.WriteString(text[last:m[i+1]]) // up to the end of the kept prefix
			switch {
			case strings.HasSuffix(v, "@"):
				b.WriteString("[redacted]@")
			case v[0] == '"' || v[0] == '\'':
				b.WriteString(v[:1] + "[redacted]" + v[:1])
			default:
				b.WriteString("[redacted]")
			}
			last = m[1]
			break
		}
	}
	b.WriteString(text[last:])
	return b.String()
}
