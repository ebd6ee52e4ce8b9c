package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Redis is a Backend on a Redis server, for exchanges shared by many users or
// served by several exchange processes. Keys (all under a prefix):
//
//	st:<run>:<uid>   ACTIVE|TERMINATED      mbx:<run>:<uid>  record JSON
//	q:<run>:<uid>    list of message JSON   req:<run>:<uid>  hash tag -> pending request header
//	out:<run>:<uid>  requests sent          done:<run>:<uid> requests answered
//	hb:<run>:<uid>   last activity (ns)     qb:<run>:<uid>   bytes queued
//	hi:<run>:<uid>   holder instance        hj:<run>:<uid>   holder JSON
//	run:<run>        set of uids            tl:<run>         list of MessageRecord JSON
//	pol:<run>        RunPolicy JSON         tok:<sha256>     TokenInfo JSON (or a bare run)
//	held             bytes queued in every mailbox (MaxTotalBytes)
//	dd:<run>:<uid>   sorted set "src:tag:kind" -> ms accepted: messages Put de-duplicates
//	                 (Limits.DedupeWindow; expires when idle for the window)
//	dds:<run>:<uid>:<src>  sorted set "tag:kind" -> ms accepted: the same, one sender's
//	                 (its bound, Limits.DedupeEntries)
//
// Mailbox keys carry the run, so runs never share a mailbox.
//
// Blocking receive uses BLPOP with fractional-second timeouts (Redis >= 6), in
// chunks of at most one second so the client's read timeout never fires.
type Redis struct {
	c      *redis.Client
	prefix string
	tlCap  int // records kept per run (TimelineCap)
}

// closeSentinel wakes blocked receivers of a terminated mailbox (the same trick
// as Academy's RedisBackend _CLOSE_SENTINEL).
const closeSentinel = "<CLOSED>"

// NewRedis connects to the Redis server at url (redis://host:port/db) and checks
// it answers. prefix namespaces keys ("" = "mosaic:exchange:").
func NewRedis(ctx context.Context, url, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("exchange redis url %s: %w (expected redis://host:port/db)", RedactURL(url), redactErr(err, url))
	}
	if opt.PoolSize < 256 {
		opt.PoolSize = 256 // every blocked receive holds a connection
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("exchange redis at %s is not reachable: %w; start redis-server or fix the URL", opt.Addr, err)
	}
	if prefix == "" {
		prefix = "mosaic:exchange:"
	}
	return &Redis{c: c, prefix: prefix, tlCap: TimelineCap}, nil
}

func (r *Redis) k(kind string, id any) string { return fmt.Sprint(r.prefix, kind, ":", id) }

// bk is the key of a per-mailbox value.
func (r *Redis) bk(kind, run string, uid uuid.UUID) string {
	return r.prefix + kind + ":" + run + ":" + uid.String()
}

func unlimited(v int64) int64 {
	if v <= 0 {
		return 1 << 62
	}
	return v
}

var createScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[3]) then return -1 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], 'ACTIVE')
redis.call('SADD', KEYS[3], ARGV[2])
return 1
`)

// Create implements Backend.
func (r *Redis) Create(ctx context.Context, rec MailboxRecord, lim Limits) (MailboxRecord, bool, error) {
	uid := rec.ID.UID
	data, err := json.Marshal(rec)
	if err != nil {
		return MailboxRecord{}, false, err
	}
	n, err := createScript.Run(ctx, r.c, []string{r.bk("mbx", rec.Run, uid), r.bk("st", rec.Run, uid), r.k("run", rec.Run)},
		data, uid.String(), unlimited(lim.MaxMailboxesPerRun)).Int()
	if err != nil {
		return MailboxRecord{}, false, fmt.Errorf("redis create mailbox: %w", err)
	}
	switch n {
	case 0:
		existing, err := r.Lookup(ctx, rec.Run, uid)
		return existing, false, err
	case -1:
		cnt, _ := r.c.SCard(ctx, r.k("run", rec.Run)).Result()
		return MailboxRecord{}, false, quotaCount("MaxMailboxesPerRun", "max-mailboxes-per-run", lim.MaxMailboxesPerRun,
			fmt.Sprintf("run %s has %d mailboxes", rec.Run, cnt))
	}
	rec.Status = StatusActive
	return rec, true, nil
}

// Lookup implements Backend.
func (r *Redis) Lookup(ctx context.Context, run string, uid uuid.UUID) (MailboxRecord, error) {
	vals, err := r.c.MGet(ctx, r.bk("mbx", run, uid), r.bk("st", run, uid)).Result()
	if err != nil {
		return MailboxRecord{}, fmt.Errorf("redis lookup mailbox: %w", err)
	}
	return r.decodeRecord(run, uid, vals[0], vals[1])
}

func (r *Redis) decodeRecord(run string, uid uuid.UUID, data, status any) (MailboxRecord, error) {
	s, ok := data.(string)
	if !ok {
		return MailboxRecord{}, notFound(run, uid)
	}
	var rec MailboxRecord
	if err := json.Unmarshal([]byte(s), &rec); err != nil {
		return MailboxRecord{}, fmt.Errorf("redis mailbox record %s is corrupt: %w", uid, err)
	}
	rec.Status = StatusActive
	if st, _ := status.(string); st == string(StatusTerminated) {
		rec.Status = StatusTerminated
	}
	return rec, nil
}

// List implements Backend.
func (r *Redis) List(ctx context.Context, run string) ([]MailboxRecord, error) {
	ids, err := r.c.SMembers(ctx, r.k("run", run)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis list mailboxes: %w", err)
	}
	out := make([]MailboxRecord, 0, len(ids))
	for _, s := range ids {
		uid, err := uuid.Parse(s)
		if err != nil {
			continue
		}
		rec, err := r.Lookup(ctx, run, uid)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	// Order by creation so both backends list alike.
	sortRecords(out)
	return out, nil
}

var terminateScript = redis.NewScript(`
local st = redis.call('GET', KEYS[1])
if not st then return {'missing'} end
if st == 'TERMINATED' then return {'done'} end
redis.call('SET', KEYS[1], 'TERMINATED')
local qb = tonumber(redis.call('GET', KEYS[4]) or '0')
if qb > 0 then redis.call('DECRBY', KEYS[5], qb) end
redis.call('DEL', KEYS[2], KEYS[4], KEYS[6], KEYS[7])
redis.call('RPUSH', KEYS[2], ARGV[1])
local pend = redis.call('HVALS', KEYS[3])
redis.call('DEL', KEYS[3])
table.insert(pend, 1, 'ok')
return pend
`)

// Terminate implements Backend.
func (r *Redis) Terminate(ctx context.Context, run string, uid uuid.UUID) ([]Header, error) {
	keys := []string{r.bk("st", run, uid), r.bk("q", run, uid), r.bk("req", run, uid), r.bk("qb", run, uid), r.k("held", "all"),
		r.bk("hi", run, uid), r.bk("hj", run, uid)}
	res, err := terminateScript.Run(ctx, r.c, keys, closeSentinel).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redis terminate mailbox: %w", err)
	}
	switch res[0] {
	case "missing":
		return nil, notFound(run, uid)
	case "done":
		return nil, nil
	}
	out := make([]Header, 0, len(res)-1)
	for _, s := range res[1:] {
		var h Header
		if json.Unmarshal([]byte(s), &h) == nil {
			out = append(out, h)
		}
	}
	return out, nil
}

var reopenScript = redis.NewScript(`
if not redis.call('GET', KEYS[1]) then return 0 end
redis.call('SET', KEYS[1], 'ACTIVE')
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return 1
`)

// Reopen implements Backend.
func (r *Redis) Reopen(ctx context.Context, run string, uid uuid.UUID) error {
	n, err := reopenScript.Run(ctx, r.c, []string{r.bk("st", run, uid), r.bk("q", run, uid), r.bk("hi", run, uid), r.bk("hj", run, uid), r.bk("hb", run, uid)}).Int()
	if err != nil {
		return fmt.Errorf("redis reopen mailbox: %w", err)
	}
	if n == 0 {
		return notFound(run, uid)
	}
	return nil
}

var claimScript = redis.NewScript(`
if not redis.call('GET', KEYS[1]) then return {'missing'} end
local cur = redis.call('GET', KEYS[2])
local hb = tonumber(redis.call('GET', KEYS[4]) or '0')
local now = tonumber(ARGV[3])
if cur and cur ~= '' and (now - hb) < tonumber(ARGV[4]) and cur ~= ARGV[1] then
  return {'held', redis.call('GET', KEYS[3]) or '', redis.call('GET', KEYS[4]) or '0'}
end
if ARGV[1] ~= '' then
  redis.call('SET', KEYS[2], ARGV[1])
  redis.call('SET', KEYS[3], ARGV[2])
else
  redis.call('DEL', KEYS[2], KEYS[3])
end
redis.call('SET', KEYS[4], ARGV[3])
return {'ok'}
`)

// Claim implements Backend.
func (r *Redis) Claim(ctx context.Context, run string, uid uuid.UUID, h Holder, now time.Time, ttl time.Duration) (ClaimResult, error) {
	hj, _ := json.Marshal(h)
	keys := []string{r.bk("st", run, uid), r.bk("hi", run, uid), r.bk("hj", run, uid), r.bk("hb", run, uid)}
	res, err := claimScript.Run(ctx, r.c, keys, h.Instance, hj, now.UnixNano(), ttl.Nanoseconds()).StringSlice()
	if err != nil {
		return ClaimResult{}, fmt.Errorf("redis claim mailbox: %w", err)
	}
	switch res[0] {
	case "missing":
		return ClaimResult{}, notFound(run, uid)
	case "held":
		var cr ClaimResult
		_ = json.Unmarshal([]byte(res[1]), &cr.Holder)
		if ns, err := strconv.ParseInt(res[2], 10, 64); err == nil {
			cr.LastActive = time.Unix(0, ns)
		}
		return cr, nil
	}
	return ClaimResult{OK: true}, nil
}

var putScript = redis.NewScript(`
local st = redis.call('GET', KEYS[1])
if not st then return {-1} end
local window = tonumber(ARGV[12])
if window > 0 then
  local expired = tonumber(ARGV[11]) - window
  redis.call('ZREMRANGEBYSCORE', KEYS[12], '-inf', expired)
  redis.call('ZREMRANGEBYSCORE', KEYS[13], '-inf', expired)
  if redis.call('ZSCORE', KEYS[12], ARGV[14]) then return {0} end
end
if st ~= 'ACTIVE' then return {-2} end
local size = string.len(ARGV[1])
local qlen = redis.call('LLEN', KEYS[2])
if qlen >= tonumber(ARGV[8]) then return {-3, qlen} end
if ARGV[2] == 'request' then
  local np = redis.call('HLEN', KEYS[3])
  if np >= tonumber(ARGV[8]) then return {-6, np} end
end
local qb = tonumber(redis.call('GET', KEYS[10]) or '0')
if qb + size > tonumber(ARGV[9]) then return {-4, qb} end
local held = tonumber(redis.call('GET', KEYS[11]) or '0')
if held + size > tonumber(ARGV[10]) then return {-5, held} end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('INCRBY', KEYS[10], size)
redis.call('INCRBY', KEYS[11], size)
if redis.call('RPUSH', KEYS[8], ARGV[5]) > tonumber(ARGV[7]) then redis.call('LTRIM', KEYS[8], -tonumber(ARGV[7]), -1) end
if redis.call('EXISTS', KEYS[9]) == 1 then redis.call('SET', KEYS[7], ARGV[6]) end
if ARGV[2] == 'request' then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
  redis.call('INCR', KEYS[4])
elseif ARGV[2] == 'response' then
  if redis.call('HDEL', KEYS[5], ARGV[3]) == 1 then redis.call('INCR', KEYS[6]) end
end
if window > 0 then
  local now = tonumber(ARGV[11])
  redis.call('ZADD', KEYS[12], now, ARGV[14])
  redis.call('ZADD', KEYS[13], now, ARGV[15])
  local n = redis.call('ZCARD', KEYS[13])
  local cap = tonumber(ARGV[13])
  if n > cap then
    for _, old in ipairs(redis.call('ZRANGE', KEYS[13], 0, n - cap - 1)) do
      redis.call('ZREM', KEYS[12], ARGV[16] .. old)
    end
    redis.call('ZREMRANGEBYRANK', KEYS[13], 0, n - cap - 1)
  end
  n = redis.call('ZCARD', KEYS[12])
  cap = tonumber(ARGV[17])
  if n > cap then redis.call('ZREMRANGEBYRANK', KEYS[12], 0, n - cap - 1) end
  redis.call('PEXPIRE', KEYS[12], window)
  redis.call('PEXPIRE', KEYS[13], window)
end
return {1}
`)

// Put implements Backend in one atomic script (de-duplication, status check,
// quotas, enqueue, request tracking, sender heartbeat, timeline, remembering the
// message for de-duplication): the dedupe entry exists iff the message was queued.
// A repeat is known by dd:<run>:<dest> (every sender's messages: the mailbox
// bound); dds:<run>:<dest>:<src> holds the same sender's, for its own bound, and
// may keep a few the mailbox bound made dd forget (harmless: they only count
// against that sender's bound until they expire).
func (r *Redis) Put(ctx context.Context, m Message, rec MessageRecord, lim Limits) (bool, error) {
	dest, src, run := m.Header.Dest.UID, m.Header.Src.UID, rec.Run
	hdr, _ := json.Marshal(m.Header)
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	keys := []string{r.bk("st", run, dest), r.bk("q", run, dest), r.bk("req", run, dest), r.bk("out", run, src), r.bk("req", run, src),
		r.bk("done", run, src), r.bk("hb", run, src), r.k("tl", run), r.bk("st", run, src), r.bk("qb", run, dest), r.k("held", "all"),
		r.bk("dd", run, dest), r.bk("dds", run, dest) + ":" + src.String()}
	window := max(lim.DedupeWindow.Milliseconds(), 0)
	if lim.DedupeWindow > 0 {
		window = max(window, 1)
	}
	res, err := putScript.Run(ctx, r.c, keys, m.Raw, m.Header.Kind, m.Header.Tag.String(), hdr, recJSON, rec.Time.UnixNano(), r.tlCap,
		unlimited(lim.MaxQueuedMessages), unlimited(lim.MaxQueuedBytes), unlimited(lim.MaxTotalBytes),
		rec.Time.UnixMilli(), window, lim.dedupeEntries(), dedupeID(m.Header), dedupeSrcID(m.Header), src.String()+":",
		lim.dedupeMailboxEntries()).Int64Slice()
	if err != nil {
		return false, fmt.Errorf("redis put message: %w", err)
	}
	size := len(m.Raw)
	switch res[0] {
	case -1:
		return false, notFound(run, dest)
	case -2:
		return false, fmt.Errorf("%w: %s", ErrTerminated, dest)
	case -3:
		return false, quotaCount("MaxQueuedMessages", "max-queued-messages", lim.MaxQueuedMessages, fmt.Sprintf("mailbox %s has %d messages queued", dest, res[1]))
	case -6:
		return false, quotaCount("MaxQueuedMessages", "max-queued-messages", lim.MaxQueuedMessages, fmt.Sprintf("mailbox %s has %d requests unanswered", dest, res[1]))
	case -4:
		return false, quotaSize("MaxQueuedBytes", "max-queued-bytes", lim.MaxQueuedBytes, fmt.Sprintf("mailbox %s holds %d bytes, the message has %d", dest, res[1], size))
	case -5:
		return false, quotaSize("MaxTotalBytes", "max-total-bytes", lim.MaxTotalBytes, fmt.Sprintf("the exchange holds %d bytes, the message has %d", res[1], size))
	}
	return res[0] == 1, nil // 0: a repeat within the dedupe window, not queued again
}

var popScript = redis.NewScript(`
local v = redis.call('LPOP', KEYS[1])
if not v then return false end
if v ~= ARGV[1] then
  redis.call('DECRBY', KEYS[2], string.len(v))
  redis.call('DECRBY', KEYS[3], string.len(v))
end
return v
`)

// Get implements Backend.
func (r *Redis) Get(ctx context.Context, run string, uid uuid.UUID, wait time.Duration) ([]byte, error) {
	pipe := r.c.Pipeline()
	stCmd := pipe.Get(ctx, r.bk("st", run, uid))
	pipe.Set(ctx, r.bk("hb", run, uid), time.Now().UnixNano(), 0)
	_, err := pipe.Exec(ctx)
	st, serr := stCmd.Result()
	if errors.Is(serr, redis.Nil) {
		r.c.Del(ctx, r.bk("hb", run, uid)) // no heartbeat for a mailbox that does not exist
		return nil, notFound(run, uid)
	}
	if err != nil {
		return nil, fmt.Errorf("redis receive: %w", err)
	}
	if st == string(StatusTerminated) {
		return nil, fmt.Errorf("%w: %s", ErrTerminated, uid)
	}
	q := r.bk("q", run, uid)
	if wait == 0 {
		v, err := popScript.Run(ctx, r.c, []string{q, r.bk("qb", run, uid), r.k("held", "all")}, closeSentinel).Text()
		if errors.Is(err, redis.Nil) {
			return nil, ErrTimeout
		}
		if err != nil {
			return nil, fmt.Errorf("redis receive: %w", err)
		}
		return r.popped(ctx, run, uid, v)
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	// Bounded: each iteration blocks up to 1 s and the loop ends at the deadline
	// or when ctx is done.
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk := time.Second
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return nil, ErrTimeout
			}
			chunk = min(chunk, max(left, time.Millisecond))
		}
		res, err := r.c.Do(ctx, "BLPOP", q, strconv.FormatFloat(chunk.Seconds(), 'f', 3, 64)).StringSlice()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("redis receive: %w", err)
		}
		if res[1] != closeSentinel {
			// BLPOP cannot run inside a script: account for the bytes after it.
			n := int64(len(res[1]))
			pipe := r.c.Pipeline()
			pipe.DecrBy(ctx, r.bk("qb", run, uid), n)
			pipe.DecrBy(ctx, r.k("held", "all"), n)
			_, _ = pipe.Exec(ctx)
		}
		return r.popped(ctx, run, uid, res[1])
	}
}

func (r *Redis) popped(ctx context.Context, run string, uid uuid.UUID, v string) ([]byte, error) {
	if v == closeSentinel {
		// Put it back so every other receiver of this mailbox wakes too.
		r.c.RPush(ctx, r.bk("q", run, uid), closeSentinel)
		return nil, fmt.Errorf("%w: %s", ErrTerminated, uid)
	}
	return []byte(v), nil
}

// Touch implements Backend.
func (r *Redis) Touch(ctx context.Context, run string, uid uuid.UUID, at time.Time) error {
	return r.c.Set(ctx, r.bk("hb", run, uid), at.UnixNano(), 0).Err()
}

// LastActive implements Backend.
func (r *Redis) LastActive(ctx context.Context, run string, uid uuid.UUID) (time.Time, bool, error) {
	vals, err := r.c.MGet(ctx, r.bk("st", run, uid), r.bk("hb", run, uid)).Result()
	if err != nil {
		return time.Time{}, false, fmt.Errorf("redis heartbeat: %w", err)
	}
	if vals[0] == nil {
		return time.Time{}, false, notFound(run, uid)
	}
	s, ok := vals[1].(string)
	if !ok {
		return time.Time{}, false, nil
	}
	ns, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false, nil
	}
	return time.Unix(0, ns), true, nil
}

// Stats implements Backend.
func (r *Redis) Stats(ctx context.Context, run string, uid uuid.UUID) (AgentStats, error) {
	pipe := r.c.Pipeline()
	st := pipe.Exists(ctx, r.bk("st", run, uid))
	ql := pipe.LLen(ctx, r.bk("q", run, uid))
	pl := pipe.HLen(ctx, r.bk("req", run, uid))
	done := pipe.Get(ctx, r.bk("done", run, uid))
	out := pipe.Get(ctx, r.bk("out", run, uid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return AgentStats{}, fmt.Errorf("redis stats: %w", err)
	}
	if st.Val() == 0 {
		return AgentStats{}, notFound(run, uid)
	}
	d, _ := done.Int64()
	o, _ := out.Int64()
	return makeStats(ql.Val(), pl.Val(), d, o), nil
}

// Records implements Backend.
func (r *Redis) Records(ctx context.Context, run string) ([]MessageRecord, error) {
	vals, err := r.c.LRange(ctx, r.k("tl", run), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis timeline: %w", err)
	}
	out := make([]MessageRecord, 0, len(vals))
	for _, v := range vals {
		var rec MessageRecord
		if json.Unmarshal([]byte(v), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// SetPolicy implements Backend.
func (r *Redis) SetPolicy(ctx context.Context, run string, p RunPolicy) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return r.c.Set(ctx, r.k("pol", run), data, 0).Err()
}

// Policy implements Backend.
func (r *Redis) Policy(ctx context.Context, run string) (RunPolicy, bool, error) {
	s, err := r.c.Get(ctx, r.k("pol", run)).Result()
	if errors.Is(err, redis.Nil) {
		return RunPolicy{}, false, nil
	}
	if err != nil {
		return RunPolicy{}, false, fmt.Errorf("redis policy: %w", err)
	}
	var p RunPolicy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return RunPolicy{}, false, fmt.Errorf("redis policy of run %s is corrupt: %w", run, err)
	}
	return p, true, nil
}

// SetToken implements Backend.
func (r *Redis) SetToken(ctx context.Context, hash string, info TokenInfo) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	return r.c.Set(ctx, r.k("tok", hash), data, 0).Err()
}

// DeleteToken implements Backend.
func (r *Redis) DeleteToken(ctx context.Context, hash string) error {
	return r.c.Del(ctx, r.k("tok", hash)).Err()
}

// Token implements Backend. A bare string value (written by older servers) is
// an operator token of that run.
func (r *Redis) Token(ctx context.Context, hash string) (TokenInfo, bool, error) {
	s, err := r.c.Get(ctx, r.k("tok", hash)).Result()
	if errors.Is(err, redis.Nil) {
		return TokenInfo{}, false, nil
	}
	if err != nil {
		return TokenInfo{}, false, fmt.Errorf("redis token lookup: %w", err)
	}
	var info TokenInfo
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &info) != nil {
		return TokenInfo{Run: s}, true, nil
	}
	return info, true, nil
}

// HeldBytes implements Backend.
func (r *Redis) HeldBytes(ctx context.Context) (int64, error) {
	n, err := r.c.Get(ctx, r.k("held", "all")).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redis held bytes: %w", err)
	}
	return n, nil
}

// Close implements Backend.
func (r *Redis) Close() error { return r.c.Close() }

// RedactURL hides the password of a URL's user info (redis://:secret@host ->
// redis://:xxxxx@host) for messages; a URL that does not parse is not shown
// at all (it may hold a password).
func RedactURL(u string) string {
	p, err := neturl.Parse(u)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if p.User == nil {
		return u
	}
	if _, has := p.User.Password(); !has {
		return u
	}
	return p.Redacted()
}

// redactErr keeps a parse error's text from repeating the URL (and its
// password).
func redactErr(err error, u string) error {
	if u == "" || !strings.Contains(err.Error(), u) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), u, RedactURL(u)))
}
