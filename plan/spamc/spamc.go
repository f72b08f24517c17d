// Package spamc asks SpamAssassin's spamd (the spamc protocol, SPAMC/1.5) for a second opinion
// on mail being planned. It is optional: the plan's embedded rules work without it. Where a
// spamd runs, Objects wraps a listing so that each message's verdict and score reach the
// classifier as the mail.spam fact: spam is junk "a spam filter marked it (spamd: 15.3/5.0)",
// which, like any junk, is never removable when the mailbox shows a conversation.
//
// spamd reads whole messages (about 6 messages/s on two cores with its shipped rules), so this
// suits a second opinion on a few thousand messages, not a default path for a large mailbox.
//
// # Stability
//
// Not yet stable: an optional connection for tools (svc corpus bench --spamd); its API may
// change between commits.
package spamc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrProtocol is returned when spamd answers something the spamc protocol does not allow, or an
// error status.
var ErrProtocol = errors.New("spamd protocol error")

// MaxMessageBytes is how much of a message is sent: spamc's own default limit, beyond which
// spamd is not asked (Check returns a zero Verdict, Skipped set).
const MaxMessageBytes = 500 << 10

// Client talks to one spamd.
type Client struct {
	// Addr is spamd's TCP address, host:port.
	Addr string
	// Timeout bounds one check; zero means 30 s.
	Timeout time.Duration
	// User is the spamd user whose settings apply; empty for spamd's default.
	User string
}

// Checker is a spam filter asked about one message at a time: spamd (Client) or rspamd
// (Rspamd). Check must be safe for concurrent use.
type Checker interface {
	Check(ctx context.Context, msg []byte) (Verdict, error)
}

// Verdict is a filter's answer for one message.
type Verdict struct {
	Spam             bool
	Score, Threshold float64
	// Skipped is set when the message was not sent (larger than MaxMessageBytes).
	Skipped bool
	// Filter names the filter ("spamd" when empty).
	Filter string
}

// String is the verdict as a reason names it: "spamd: 15.3/5.0".
func (v Verdict) String() string {
	name := v.Filter
	if name == "" {
		name = "spamd"
	}
	return name + ": " + strconv.FormatFloat(v.Score, 'f', 1, 64) + "/" + strconv.FormatFloat(v.Threshold, 'f', 1, 64)
}

// Check asks spamd whether msg is spam (the CHECK command: spamd scores the message and returns
// no body).
func (c *Client) Check(ctx context.Context, msg []byte) (Verdict, error) {
	if len(msg) > MaxMessageBytes {
		return Verdict{Skipped: true}, nil
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		return Verdict{}, fmt.Errorf("spamd %s: %w", c.Addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	var head strings.Builder
	head.WriteString("CHECK SPAMC/1.5\r\n")
	fmt.Fprintf(&head, "Content-length: %d\r\n", len(msg))
	if c.User != "" {
		fmt.Fprintf(&head, "User: %s\r\n", c.User)
	}
	head.WriteString("\r\n")
	if _, err := io.WriteString(conn, head.String()); err != nil {
		return Verdict{}, fmt.Errorf("spamd %s: %w", c.Addr, err)
	}
	if _, err := conn.Write(msg); err != nil {
		return Verdict{}, fmt.Errorf("spamd %s: %w", c.Addr, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.CloseWrite() // the whole message is sent
	}
	v, err := readVerdict(bufio.NewReader(conn))
	if err != nil {
		return Verdict{}, fmt.Errorf("spamd %s: %w", c.Addr, err)
	}
	return v, nil
}

// readVerdict reads spamd's answer: "SPAMD/1.1 0 EX_OK", then headers, one of them
// "Spam: True ; 15.3 / 5.0".
func readVerdict(r *bufio.Reader) (Verdict, error) {
	status, err := r.ReadString('\n')
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: no status line: %v", ErrProtocol, err)
	}
	f := strings.Fields(status)
	if len(f) < 3 || !strings.HasPrefix(f[0], "SPAMD/") {
		return Verdict{}, fmt.Errorf("%w: status %q", ErrProtocol, strings.TrimSpace(status))
	}
	if f[1] != "0" {
		return Verdict{}, fmt.Errorf("%w: spamd answered %s", ErrProtocol, strings.Join(f[1:], " "))
	}
	var v Verdict
	found := false
	for {
		line, rerr := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, val, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Spam") {
			if v, err = parseSpam(val); err != nil {
				return Verdict{}, err
			}
			found = true
		}
		if rerr != nil {
			break
		}
	}
	if !found {
		return Verdict{}, fmt.Errorf("%w: no Spam header", ErrProtocol)
	}
	return v, nil
}

// parseSpam reads " True ; 15.3 / 5.0".
func parseSpam(s string) (Verdict, error) {
	flag, scores, ok := strings.Cut(s, ";")
	score, threshold, ok2 := strings.Cut(scores, "/")
	if !ok || !ok2 {
		return Verdict{}, fmt.Errorf("%w: Spam header %q", ErrProtocol, strings.TrimSpace(s))
	}
	var v Verdict
	switch strings.ToLower(strings.TrimSpace(flag)) {
	case "true", "yes":
		v.Spam = true
	case "false", "no":
	default:
		return Verdict{}, fmt.Errorf("%w: Spam header %q", ErrProtocol, strings.TrimSpace(s))
	}
	var err1, err2 error
	v.Score, err1 = strconv.ParseFloat(strings.TrimSpace(score), 64)
	v.Threshold, err2 = strconv.ParseFloat(strings.TrimSpace(threshold), 64)
	if err1 != nil || err2 != nil {
		return Verdict{}, fmt.Errorf("%w: Spam header %q", ErrProtocol, strings.TrimSpace(s))
	}
	return v, nil
}
