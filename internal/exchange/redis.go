package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Redis is a Backend on a Redis server, for exchanges shared by many users or
// served by several exchange processes. Keys (all under a prefix):
//
//	st:<uid>   ACTIVE|TERMINATED          mbx:<uid> record JSON
//	q:<uid>    list of message JSON       req:<uid> hash tag -> pending request header
//	out:<uid>  requests sent (counter)    done:<uid> requests answered (counter)
//	hb:<uid>   last activity (unix ns)    run:<run> set of uids
//	tl:<run>   list of MessageRecord JSON pol:<run> RunPolicy JSON
//	tok:<sha256> run
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
		return nil, fmt.Errorf("exchange redis url %q: %w (expected redis://host:port/db)", url, err)
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

// Create implements Backend.
func (r *Redis) Create(ctx context.Context, rec MailboxRecord) (MailboxRecord, bool, error) {
	uid := rec.ID.UID
	data, err := json.Marshal(rec)
	if err != nil {
		return MailboxRecord{}, false, err
	}
	ok, err := r.c.SetNX(ctx, r.k("mbx", uid), data, 0).Result()
	if err != nil {
		return MailboxRecord{}, false, fmt.Errorf("redis create mailbox: %w", err)
	}
	if !ok {
		existing, err := r.Lookup(ctx, uid)
		return existing, false, err
	}
	pipe := r.c.TxPipeline()
	pipe.Set(ctx, r.k("st", uid), string(StatusActive), 0)
	pipe.SAdd(ctx, r.k("run", rec.Run), uid.String())
	if _, err := pipe.Exec(ctx); err != nil {
		return MailboxRecord{}, false, fmt.Errorf("redis create mailbox: %w", err)
	}
	rec.Status = StatusActive
	return rec, true, nil
}

// Lookup implements Backend.
func (r *Redis) Lookup(ctx context.Context, uid uuid.UUID) (MailboxRecord, error) {
	vals, err := r.c.MGet(ctx, r.k("mbx", uid), r.k("st", uid)).Result()
	if err != nil {
		return MailboxRecord{}, fmt.Errorf("redis lookup mailbox: %w", err)
	}
	return r.decodeRecord(uid, vals[0], vals[1])
}

func (r *Redis) decodeRecord(uid uuid.UUID, data, status any) (MailboxRecord, error) {
	s, ok := data.(string)
	if !ok {
		return MailboxRecord{}, fmt.Errorf("%w: %s", ErrNotFound, uid)
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
		rec, err := r.Lookup(ctx, uid)
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
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[2], ARGV[1])
local pend = redis.call('HVALS', KEYS[3])
redis.call('DEL', KEYS[3])
table.insert(pend, 1, 'ok')
return pend
`)

// Terminate implements Backend.
func (r *Redis) Terminate(ctx context.Context, uid uuid.UUID) ([]Header, error) {
	res, err := terminateScript.Run(ctx, r.c, []string{r.k("st", uid), r.k("q", uid), r.k("req", uid)}, closeSentinel).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redis terminate mailbox: %w", err)
	}
	switch res[0] {
	case "missing":
		return nil, fmt.Errorf("%w: %s", ErrNotFound, uid)
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

var putScript = redis.NewScript(`
local st = redis.call('GET', KEYS[1])
if not st then return -1 end
if st ~= 'ACTIVE' then return -2 end
redis.call('RPUSH', KEYS[2], ARGV[1])
if redis.call('RPUSH', KEYS[8], ARGV[5]) > tonumber(ARGV[7]) then redis.call('LTRIM', KEYS[8], -tonumber(ARGV[7]), -1) end
if redis.call('EXISTS', KEYS[9]) == 1 then redis.call('SET', KEYS[7], ARGV[6]) end
if ARGV[2] == 'request' then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
  redis.call('INCR', KEYS[4])
elseif ARGV[2] == 'response' then
  if redis.call('HDEL', KEYS[5], ARGV[3]) == 1 then redis.call('INCR', KEYS[6]) end
end
return 1
`)

// Put implements Backend in one atomic script (status check, enqueue, request
// tracking, sender heartbeat, timeline).
func (r *Redis) Put(ctx context.Context, m Message, rec MessageRecord) error {
	dest, src := m.Header.Dest.UID, m.Header.Src.UID
	hdr, _ := json.Marshal(m.Header)
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	keys := []string{r.k("st", dest), r.k("q", dest), r.k("req", dest), r.k("out", src), r.k("req", src), r.k("done", src),
		r.k("hb", src), r.k("tl", rec.Run), r.k("st", src)}
	n, err := putScript.Run(ctx, r.c, keys, m.Raw, m.Header.Kind, m.Header.Tag.String(), hdr, recJSON, rec.Time.UnixNano(), r.tlCap).Int()
	if err != nil {
		return fmt.Errorf("redis put message: %w", err)
	}
	switch n {
	case -1:
		return fmt.Errorf("%w: %s", ErrNotFound, dest)
	case -2:
		return fmt.Errorf("%w: %s", ErrTerminated, dest)
	}
	return nil
}

// Get implements Backend.
func (r *Redis) Get(ctx context.Context, uid uuid.UUID, wait time.Duration) ([]byte, error) {
	pipe := r.c.Pipeline()
	stCmd := pipe.Get(ctx, r.k("st", uid))
	pipe.Set(ctx, r.k("hb", uid), time.Now().UnixNano(), 0)
	_, err := pipe.Exec(ctx)
	st, serr := stCmd.Result()
	if errors.Is(serr, redis.Nil) {
		r.c.Del(ctx, r.k("hb", uid)) // no heartbeat for a mailbox that does not exist
		return nil, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	if err != nil {
		return nil, fmt.Errorf("redis receive: %w", err)
	}
	if st == string(StatusTerminated) {
		return nil, fmt.Errorf("%w: %s", ErrTerminated, uid)
	}
	q := r.k("q", uid)
	if wait == 0 {
		v, err := r.c.LPop(ctx, q).Result()
		if errors.Is(err, redis.Nil) {
			return nil, ErrTimeout
		}
		if err != nil {
			return nil, fmt.Errorf("redis receive: %w", err)
		}
		return r.popped(ctx, uid, v)
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
		return r.popped(ctx, uid, res[1])
	}
}

func (r *Redis) popped(ctx context.Context, uid uuid.UUID, v string) ([]byte, error) {
	if v == closeSentinel {
		// Put it back so every other receiver of this mailbox wakes too.
		r.c.RPush(ctx, r.k("q", uid), closeSentinel)
		return nil, fmt.Errorf("%w: %s", ErrTerminated, uid)
	}
	return []byte(v), nil
}

// Touch implements Backend.
func (r *Redis) Touch(ctx context.Context, uid uuid.UUID, at time.Time) error {
	return r.c.Set(ctx, r.k("hb", uid), at.UnixNano(), 0).Err()
}

// LastActive implements Backend.
func (r *Redis) LastActive(ctx context.Context, uid uuid.UUID) (time.Time, bool, error) {
	vals, err := r.c.MGet(ctx, r.k("st", uid), r.k("hb", uid)).Result()
	if err != nil {
		return time.Time{}, false, fmt.Errorf("redis heartbeat: %w", err)
	}
	if vals[0] == nil {
		return time.Time{}, false, fmt.Errorf("%w: %s", ErrNotFound, uid)
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
func (r *Redis) Stats(ctx context.Context, uid uuid.UUID) (AgentStats, error) {
	pipe := r.c.Pipeline()
	st := pipe.Exists(ctx, r.k("st", uid))
	ql := pipe.LLen(ctx, r.k("q", uid))
	pl := pipe.HLen(ctx, r.k("req", uid))
	done := pipe.Get(ctx, r.k("done", uid))
	out := pipe.Get(ctx, r.k("out", uid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return AgentStats{}, fmt.Errorf("redis stats: %w", err)
	}
	if st.Val() == 0 {
		return AgentStats{}, fmt.Errorf("%w: %s", ErrNotFound, uid)
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
func (r *Redis) SetToken(ctx context.Context, hash, run string) error {
	return r.c.Set(ctx, r.k("tok", hash), run, 0).Err()
}

// DeleteToken implements Backend.
func (r *Redis) DeleteToken(ctx context.Context, hash string) error {
	return r.c.Del(ctx, r.k("tok", hash)).Err()
}

// TokenRun implements Backend.
func (r *Redis) TokenRun(ctx context.Context, hash string) (string, bool, error) {
	s, err := r.c.Get(ctx, r.k("tok", hash)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("redis token lookup: %w", err)
	}
	return s, true, nil
}

// Close implements Backend.
func (r *Redis) Close() error { return r.c.Close() }
