package spamc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/spamdtest"
	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/spamc"
)

// gtube is the Generic Test for Unsolicited Bulk Email: every SpamAssassin scores it spam.
const gtube = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"

func spamMessage() []byte {
	return []byte("From: a@b.example\r\nTo: me@home.example\r\nSubject: test\r\nMessage-ID: <1@b.example>\r\nDate: Thu, 26 Nov 2026 10:00:00 +0000\r\n\r\n" + gtube + "\r\n")
}

func hamMessage() []byte {
	return []byte("From: Ann <ann@friend.example>\r\nTo: me@home.example\r\nSubject: lunch on Friday\r\nMessage-ID: <2@friend.example>\r\n" +
		"Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n\r\nShall we meet at noon at the usual place? Ann\r\n")
}

// fakeSpamd answers the spamc protocol as spamd does: spam when the message holds the GTUBE
// string. It checks the request it is sent: the CHECK command and a Content-length that matches.
func fakeSpamd(t *testing.T, answer func(msg []byte) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				cmd, _ := r.ReadString('\n')
				n := -1
				for {
					line, err := r.ReadString('\n')
					if err != nil || strings.TrimSpace(line) == "" {
						break
					}
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-length") {
						n, _ = strconv.Atoi(strings.TrimSpace(v))
					}
				}
				msg, _ := io.ReadAll(r)
				if cmd != "CHECK SPAMC/1.5\r\n" || n != len(msg) {
					io.WriteString(c, "SPAMD/1.5 76 Bad header line\r\n\r\n")
					return
				}
				io.WriteString(c, answer(msg))
			}(c)
		}
	}()
	return ln.Addr().String()
}

func gtubeAnswer(msg []byte) string {
	if bytes.Contains(msg, []byte(gtube)) {
		return "SPAMD/1.1 0 EX_OK\r\nSpam: True ; 1000.0 / 5.0\r\n\r\n"
	}
	return "SPAMD/1.1 0 EX_OK\r\nSpam: False ; -0.3 / 5.0\r\n\r\n"
}

func TestCheckReadsTheVerdict(t *testing.T) {
	c := &spamc.Client{Addr: fakeSpamd(t, gtubeAnswer)}
	v, err := c.Check(context.Background(), spamMessage())
	if err != nil || !v.Spam || v.Score != 1000 || v.Threshold != 5 || v.String() != "spamd: 1000.0/5.0" {
		t.Errorf("spam: %+v %v", v, err)
	}
	v, err = c.Check(context.Background(), hamMessage())
	if err != nil || v.Spam || v.Score != -0.3 {
		t.Errorf("ham: %+v %v", v, err)
	}
	if v, err := c.Check(context.Background(), make([]byte, spamc.MaxMessageBytes+1)); err != nil || !v.Skipped {
		t.Errorf("a message over the limit: %+v %v", v, err)
	}
}

func TestCheckRefusesWhatTheProtocolDoesNotAllow(t *testing.T) {
	for name, answer := range map[string]string{
		"an error status":   "SPAMD/1.1 76 EX_PROTOCOL\r\n\r\n",
		"no Spam header":    "SPAMD/1.1 0 EX_OK\r\nContent-length: 0\r\n\r\n",
		"an unreadable one": "SPAMD/1.1 0 EX_OK\r\nSpam: Maybe ; x / y\r\n\r\n",
		"not spamd":         "HTTP/1.1 400 Bad Request\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := &spamc.Client{Addr: fakeSpamd(t, func([]byte) string { return answer })}
			if _, err := c.Check(context.Background(), hamMessage()); !errors.Is(err, spamc.ErrProtocol) {
				t.Errorf("err %v, want ErrProtocol", err)
			}
		})
	}
	if _, err := (&spamc.Client{Addr: "127.0.0.1:1", Timeout: time.Second}).Check(context.Background(), hamMessage()); err == nil {
		t.Error("no spamd listening: no error")
	}
}

// listing is a one-page listing of messages.
type listing struct{ objs []plan.Object }

func (l *listing) Next(context.Context) (plan.Page, error) {
	return plan.Page{Objects: l.objs, Last: true}, nil
}

// planWithSpamd plans two messages a stranger sent (the embedded rules leave both to review)
// with spamd's verdicts added by Objects.
func planWithSpamd(t *testing.T, addr string) map[string]string {
	t.Helper()
	raw := map[string][]byte{"spam": spamMessage(), "ham": hamMessage(), "unfetchable": nil}
	var objs []plan.Object
	for _, id := range []string{"spam", "ham", "unfetchable"} {
		objs = append(objs, plan.Object{ID: id, Version: "v1", Kind: "message", SizeBytes: 500, From: "Cat <cat@far.example>",
			To: []string{"me@home.example"}, Subject: "hello", Facts: map[string]string{mail.FactMessageID: id + "@far.example"},
			CreatedAt: time.Now().AddDate(0, -2, 0), ModifiedAt: time.Now().AddDate(0, -2, 0)})
	}
	fetch := func(_ context.Context, id string) (io.ReadCloser, error) {
		if raw[id] == nil {
			return nil, fmt.Errorf("gone")
		}
		return io.NopCloser(bytes.NewReader(raw[id])), nil
	}
	l := spamc.Objects(&listing{objs}, fetch, &spamc.Client{Addr: addr})
	p, err := plan.Build(context.Background(), plan.Request{TenantID: "test:usr_01JD0000000000000000000000", UserID: "usr_01JD0000000000000000000000",
		Actor:  &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_01JD0000000000000000000000"},
		Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, Now: time.Now(),
		Sources: []plan.Source{{ID: "src_01JD0000000000000000000000", Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL,
			Status: svcv1.SourceStatus_SOURCE_STATUS_CONNECTED, CanTrash: true, Objects: l}}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Checked != 2 || l.Spam != 1 || l.Failed != 1 {
		t.Errorf("checked %d, spam %d, failed %d (%v)", l.Checked, l.Spam, l.Failed, l.LastErr)
	}
	got := map[string]string{}
	for _, o := range p.Objects {
		got[o.ProviderObjectId] = o.StorageClass.String() + ": " + o.StorageClassReason
	}
	return got
}

// spamd's verdict and score reach the plan's reason; ham and what could not be checked are
// planned on the embedded rules.
func TestObjectsAddsTheVerdictToThePlan(t *testing.T) {
	got := planWithSpamd(t, fakeSpamd(t, gtubeAnswer))
	if want := "STORAGE_CLASS_LIKELY_REMOVABLE: junk: a spam filter marked it (spamd: 1000.0/5.0)"; got["spam"] != want {
		t.Errorf("spam: %q, want %q", got["spam"], want)
	}
	for _, id := range []string{"ham", "unfetchable"} {
		if !strings.HasPrefix(got[id], "STORAGE_CLASS_REVIEW") {
			t.Errorf("%s: %q, want review", id, got[id])
		}
	}
}

// The same against a real spamd, started from the project's script: skipped, saying so, when
// spamd cannot be had. About 10 s (spamd compiles its rules at start).
func TestAgainstARealSpamd(t *testing.T) {
	addr := spamdtest.Start(t)
	got := planWithSpamd(t, addr)
	if !strings.HasPrefix(got["spam"], "STORAGE_CLASS_LIKELY_REMOVABLE: junk: a spam filter marked it (spamd: ") {
		t.Errorf("GTUBE: %q", got["spam"])
	}
	if !strings.HasPrefix(got["ham"], "STORAGE_CLASS_REVIEW") {
		t.Errorf("ham: %q", got["ham"])
	}
}
