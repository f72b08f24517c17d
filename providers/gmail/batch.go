package gmail

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gm "google.golang.org/api/gmail/v1"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/google"
	"svc.dev/svc/providers/vendorhttp"
)

// call is one call of a batch: a method and a path under the API root
// ("gmail/v1/users/me/messages/ID?format=raw").
type call struct {
	method, path string
}

// result is one call's outcome: its message, or the error it alone met.
type result struct {
	msg *gm.Message
	err error
}

// itemRounds bounds how often one call of a batch is sent again after a
// throttled or failed answer of its own.
const itemRounds = 5

// batch sends calls in batch requests of at most p.batchN calls, a few
// requests at a time, and returns one result per call in order. Calls
// answered 429, 5xx or 403-rate-limited are sent again in a later batch
// (honouring a Retry-After) up to itemRounds times. It returns an error
// only when a batch request as a whole failed.
func (p *Provider) batch(ctx context.Context, calls []call) ([]result, error) {
	out := make([]result, len(calls))
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	var told time.Duration // the longest Retry-After of the last round
	for round := 0; len(pending) > 0; round++ {
		if round > 0 {
			wait := max(told, time.Duration(rand.Int64N(int64(100*time.Millisecond)<<min(round, 6))))
			if err := sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		var (
			mu    sync.Mutex
			wg    sync.WaitGroup
			first error
			retry []int
			next  time.Duration
			sem   = make(chan struct{}, 4)
		)
		for start := 0; start < len(pending); start += p.batchN {
			chunk := pending[start:min(start+p.batchN, len(pending))]
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				res, wait, err := p.send(ctx, calls, chunk)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					first = cmpErr(first, err)
					return
				}
				for k, i := range chunk {
					r := res[k]
					if errors.Is(r.err, providers.ErrTransient) && round+1 < itemRounds {
						retry = append(retry, i)
						continue
					}
					out[i] = r
				}
				next = max(next, wait)
			})
		}
		wg.Wait()
		if first != nil {
			return nil, first
		}
		slices.Sort(retry)
		pending, told = retry, next
	}
	return out, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// send sends one batch request of the calls at idx and decodes its
// answers.
func (p *Provider) send(ctx context.Context, calls []call, idx []int) ([]result, time.Duration, error) {
	root, err := url.Parse(p.client.Endpoint)
	if err != nil {
		return nil, 0, err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	units := 0
	for k, i := range idx {
		c := calls[i]
		pw, err := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/http"}, "Content-Id": {"<item-" + strconv.Itoa(k) + ">"}})
		if err != nil {
			return nil, 0, err
		}
		fmt.Fprintf(pw, "%s %s%s HTTP/1.1\r\n\r\n", c.method, root.Path, c.path)
		u, _ := url.Parse(c.path)
		units += Cost(&http.Request{Method: c.method, URL: u})
	}
	if err := mw.Close(); err != nil {
		return nil, 0, err
	}
	ctx = google.WithCost(ctx, units)
	payload := body.Bytes()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.client.Endpoint+"batch/gmail/v1", bytes.NewReader(payload))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "multipart/mixed; boundary="+mw.Boundary())
	resp, err := p.client.HTTP.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		kind := google.StatusErr(resp.StatusCode)
		if resp.StatusCode == 403 && google.RateLimited(msg) {
			kind = providers.ErrTransient
		}
		return nil, 0, fmt.Errorf("batch request: %w: %d", kind, resp.StatusCode)
	}
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		return nil, 0, fmt.Errorf("batch response of type %q: %w", resp.Header.Get("Content-Type"), providers.ErrTransient)
	}
	out := make([]result, len(idx))
	seen := make([]bool, len(idx))
	var wait time.Duration
	mr := multipart.NewReader(resp.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("batch response: %v: %w", err, providers.ErrTransient)
		}
		cid := strings.Trim(part.Header.Get("Content-Id"), "<>")
		k, err := strconv.Atoi(strings.TrimPrefix(cid, "response-item-"))
		if err != nil || k < 0 || k >= len(idx) || seen[k] {
			return nil, 0, fmt.Errorf("batch response part %q: %w", cid, providers.ErrTransient)
		}
		seen[k] = true
		inner, err := http.ReadResponse(bufio.NewReader(part), nil)
		if err != nil {
			return nil, 0, fmt.Errorf("batch response part %q: %v: %w", cid, err, providers.ErrTransient)
		}
		b, err := io.ReadAll(inner.Body)
		inner.Body.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("batch response part %q: %v: %w", cid, err, providers.ErrTransient)
		}
		if inner.StatusCode/100 != 2 {
			kind := google.StatusErr(inner.StatusCode)
			if inner.StatusCode == 403 && google.RateLimited(b) {
				kind = providers.ErrTransient
			}
			if d, ok := vendorhttp.ParseRetryAfter(inner.Header.Get("Retry-After"), time.Now()); ok {
				wait = max(wait, d)
			}
			out[k].err = fmt.Errorf("%w: %d", kind, inner.StatusCode)
			continue
		}
		var m gm.Message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, 0, fmt.Errorf("batch response part %q: %v: %w", cid, err, providers.ErrTransient)
		}
		out[k].msg = &m
	}
	for k := range idx {
		if !seen[k] {
			out[k].err = fmt.Errorf("no answer in the batch: %w", providers.ErrTransient)
		}
	}
	return out, wait, nil
}

func msgPath(uid, id, rest string) string {
	return "gmail/v1/users/" + url.PathEscape(uid) + "/messages/" + url.PathEscape(id) + rest
}

// metadata reads the messages' headers (format=metadata), in batches.
func (p *Provider) metadata(ctx context.Context, uid string, ids []string) ([]result, error) {
	calls := make([]call, len(ids))
	for i, id := range ids {
		calls[i] = call{"GET", msgPath(uid, id, "?format=metadata")}
	}
	return p.batch(ctx, calls)
}

// FetchBatch fetches small messages in batch requests: first their
// versions and sizes (format=minimal), then, for those whose version holds
// and that fit the batch's budget, the raw messages.
func (p *Provider) FetchBatch(ctx context.Context, reqs []providers.FetchRequest, fn func(int, providers.FetchOutcome)) error {
	if len(reqs) > providers.MaxBatchSize {
		return fmt.Errorf("vendor_a_mail: a batch of %d: %w", len(reqs), providers.ErrInvalidArgument)
	}
	if len(reqs) == 0 {
		return nil
	}
	calls := make([]call, len(reqs))
	for i, r := range reqs {
		calls[i] = call{"GET", msgPath(user(r.SourceRef), r.ObjectID, "?format=minimal")}
	}
	heads, err := p.batch(ctx, calls)
	if err != nil {
		return fail("fetch batch", "", err)
	}
	outs := make([]providers.FetchOutcome, len(reqs))
	var budget providers.InlineBudget
	var want []int
	for i, h := range heads {
		r := reqs[i]
		switch {
		case h.err != nil:
			outs[i].Err = fail("fetch", r.ObjectID, h.err)
		case checkVersion(r.ObjectID, r.ExpectedVersion, h.msg) != nil:
			outs[i].Err = checkVersion(r.ObjectID, r.ExpectedVersion, h.msg)
		case r.MaxBytes > 0 && h.msg.SizeEstimate > r.MaxBytes:
			outs[i].Err = fail("fetch", r.ObjectID, fmt.Errorf("%d bytes: %w", h.msg.SizeEstimate, providers.ErrTooLarge))
		case !budget.Take(h.msg.SizeEstimate):
			outs[i].Deferred = true
		default:
			want = append(want, i)
		}
	}
	raws := make([]call, len(want))
	for k, i := range want {
		raws[k] = call{"GET", msgPath(user(reqs[i].SourceRef), reqs[i].ObjectID, "?format=raw")}
	}
	got, err := p.batch(ctx, raws)
	if err != nil {
		return fail("fetch batch", "", err)
	}
	labels := map[string]map[string]string{}
	for k, i := range want {
		r, g := reqs[i], got[k]
		if g.err != nil {
			outs[i].Err = fail("fetch", r.ObjectID, g.err)
			continue
		}
		if err := checkVersion(r.ObjectID, r.ExpectedVersion, g.msg); err != nil {
			outs[i].Err = err
			continue
		}
		raw, err := decodeRaw(g.msg.Raw)
		if err != nil {
			outs[i].Err = fail("fetch", r.ObjectID, err)
			continue
		}
		uid := user(r.SourceRef)
		names, ok := labels[uid]
		if !ok {
			if names, err = p.labelNames(ctx, uid); err != nil {
				return fail("fetch batch", "", err)
			}
			labels[uid] = names
		}
		outs[i] = providers.FetchOutcome{Object: fetched(g.msg, raw, names), Content: raw}
	}
	for i := range outs {
		fn(i, outs[i])
	}
	return nil
}

// TrashBatch trashes messages in batch requests: their versions first
// (format=minimal) where expected, then messages.trash for those that hold.
func (p *Provider) TrashBatch(ctx context.Context, reqs []providers.ActionRequest) ([]providers.ActionOutcome, error) {
	if len(reqs) > providers.MaxBatchSize {
		return nil, fmt.Errorf("vendor_a_mail: a batch of %d: %w", len(reqs), providers.ErrInvalidArgument)
	}
	outs := make([]providers.ActionOutcome, len(reqs))
	var check []int
	for i, r := range reqs {
		if r.ExpectedVersion != "" {
			check = append(check, i)
		}
	}
	calls := make([]call, len(check))
	for k, i := range check {
		calls[k] = call{"GET", msgPath(user(reqs[i].SourceRef), reqs[i].ObjectID, "?format=minimal")}
	}
	heads, err := p.batch(ctx, calls)
	if err != nil {
		return nil, fail("trash batch", "", err)
	}
	for k, i := range check {
		r, h := reqs[i], heads[k]
		if h.err != nil {
			outs[i].Err = fail("trash", r.ObjectID, h.err)
		} else if err := checkVersion(r.ObjectID, r.ExpectedVersion, h.msg); err != nil {
			outs[i].Err = err
		}
	}
	var go_ []int
	for i := range reqs {
		if outs[i].Err == nil {
			go_ = append(go_, i)
		}
	}
	calls = make([]call, len(go_))
	for k, i := range go_ {
		calls[k] = call{"POST", msgPath(user(reqs[i].SourceRef), reqs[i].ObjectID, "/trash")}
	}
	got, err := p.batch(ctx, calls)
	if err != nil {
		return nil, fail("trash batch", "", err)
	}
	for k, i := range go_ {
		if got[k].err != nil {
			outs[i].Err = fail("trash", reqs[i].ObjectID, got[k].err)
			continue
		}
		outs[i].Result = providers.ActionResult{ResultID: reqs[i].ObjectID, Restorable: true}
	}
	return outs, nil
}
