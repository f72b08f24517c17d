package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"connectrpc.com/connect"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

// newApplyCmd returns "svc apply PLAN_ID": execute an authorized plan with a live progress bar,
// then fetch the receipt and verify it offline against the server's published keys.
func newApplyCmd() *cobra.Command {
	var cf clientFlags
	var hash string
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "apply PLAN_ID",
		Short: "Execute an authorized plan, show its progress, and verify its receipt",
		Long: `Apply executes an authorized plan (authorizing it first with --hash), follows the execution
until it has a receipt, and verifies the receipt offline against the server's published keys.

On a terminal it draws a progress bar; when its output goes elsewhere (a file, a pipe) it
writes one plain line at each 10% instead: of the bytes, or of the assets when those are
further along (a failed asset adds no bytes). The bytes are those of the content the execution
goes through, counted once: an export's asset is preserved and then written, the same bytes.
It exits with status 1 unless the execution completed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			p, err := c.Plans.GetPlan(ctx, connect.NewRequest(&svcv1.GetPlanRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			if st := p.Msg.GetState(); (st == svcv1.PlanState_PLAN_STATE_VALIDATED || st == svcv1.PlanState_PLAN_STATE_DRAFT) && hash != "" {
				if p, err = c.Plans.AuthorizePlan(ctx, connect.NewRequest(&svcv1.AuthorizePlanRequest{Id: args[0], PlanHash: hash})); err != nil {
					return explain(err)
				}
			}
			res, err := c.Executions.ExecutePlan(ctx, connect.NewRequest(&svcv1.ExecutePlanRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			x := res.Msg
			fmt.Fprintf(out, "Execution %s of plan %s (%s)\n", x.GetId(), args[0], plural(len(p.Msg.GetObjects()), "object"))
			x, err = follow(ctx, newProgress(out, p.Msg), c, x, poll)
			if err != nil {
				return err
			}
			return finishExecution(cmd, &cf, c, x)
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&hash, "hash", "", "authorize the plan with this hash first, if it is not authorized yet")
	cmd.Flags().DurationVar(&poll, "poll", 250*time.Millisecond, "how often to refresh the progress")
	return cmd
}

// progress shows how far an execution is.
type progress interface {
	// update shows done of the plan's bytes and how many assets are finished.
	update(done int64, assets int64)
	// finish ends the display.
	finish()
}

// newProgress draws a bar when out is a terminal, and plain lines otherwise.
func newProgress(out io.Writer, p *svcv1.Plan) progress {
	// An export or a move preserves each asset and then writes the same bytes to the
	// destination: counting both would show twice the plan's size. The larger of the two is
	// the size of the content the execution goes through.
	total := max(p.GetProjection().GetBytesToPreserve(), p.GetProjection().GetBytesToTransfer())
	objects := int64(len(p.GetObjects()))
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar := progressbar.NewOptions64(max(total, 1), progressbar.OptionSetWriter(out), progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionUseIECUnits(true))
		return &barProgress{out: out, bar: bar, objects: objects, total: max(total, 1)}
	}
	return &lineProgress{out: out, total: total, objects: objects, last: -1}
}

type barProgress struct {
	out            io.Writer
	bar            *progressbar.ProgressBar
	objects, total int64
}

func (b *barProgress) update(done, assets int64) {
	b.bar.Describe(fmt.Sprintf("%d/%d assets", assets, b.objects))
	b.bar.Set64(min(b.total, done))
}

func (b *barProgress) finish() {
	b.bar.Finish()
	fmt.Fprintln(b.out)
}

// lineProgress writes one line each time progress crosses a tenth: at most 11 lines a run,
// whatever the poll rate, for logs and files.
type lineProgress struct {
	out            io.Writer
	total, objects int64
	last           int64 // the last tenth written
}

func (l *lineProgress) update(done, assets int64) {
	// The further of bytes and assets: an asset that fails adds no bytes, but it is done.
	tenth := int64(10)
	if l.total > 0 || l.objects > 0 {
		tenth = 0
	}
	if l.total > 0 {
		tenth = max(tenth, min(10, done*10/l.total))
	}
	if l.objects > 0 {
		tenth = max(tenth, min(10, assets*10/l.objects))
	}
	if tenth <= l.last {
		return
	}
	l.last = tenth
	fmt.Fprintf(l.out, "%3d%%  %s of %s, %d/%d assets\n", tenth*10, bytesIEC(min(done, l.total)), bytesIEC(l.total), assets, l.objects)
}

func (l *lineProgress) finish() {}

// follow polls an execution until it has a receipt, showing its progress.
func follow(ctx context.Context, pr progress, c *client.Client, x *svcv1.Execution, poll time.Duration) (*svcv1.Execution, error) {
	for {
		pr.update(max(x.GetBytesPreserved(), x.GetBytesTransferred()), x.GetCompleted()+x.GetFailed())
		if x.GetReceiptId() != "" {
			pr.finish()
			return x, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
		res, err := c.Executions.GetExecution(ctx, connect.NewRequest(&svcv1.GetExecutionRequest{Id: x.GetId()}))
		if err != nil {
			return nil, explain(err)
		}
		x = res.Msg
	}
}

// maxShownErrors is how many of an execution's errors a summary prints; the receipt has all.
const maxShownErrors = 10

// writeExecutionSummary prints an execution's status, counters and first errors.
func writeExecutionSummary(w io.Writer, x *svcv1.Execution) {
	fmt.Fprintf(w, "  status   %s: %s attempted, %s completed, %s failed\n", enumName(x.GetStatus()),
		plural(int(x.GetAttempted()), "asset"), count(int(x.GetCompleted())), count(int(x.GetFailed())))
	fmt.Fprintf(w, "  bytes    %s preserved in the vault, %s removed at the source, %s written to destinations\n",
		bytesIEC(x.GetBytesPreserved()), bytesIEC(x.GetBytesRemoved()), bytesIEC(x.GetBytesTransferred()))
	errs := x.GetErrors()
	if len(errs) == 0 {
		return
	}
	fmt.Fprintln(w, "  errors")
	for _, e := range errs[:min(len(errs), maxShownErrors)] {
		fmt.Fprintf(w, "    %s\n", e)
	}
	if more := max(int(x.GetFailed()), len(errs)) - min(len(errs), maxShownErrors); more > 0 {
		fmt.Fprintf(w, "    ... and %s not shown\n", plural(more, "more failure"))
	}
}

// finishExecution prints an ended execution's summary, verifies its receipt, and returns an
// error (a non-zero exit) unless the execution completed.
func finishExecution(cmd *cobra.Command, cf *clientFlags, c *client.Client, x *svcv1.Execution) error {
	out := cmd.OutOrStdout()
	writeExecutionSummary(out, x)
	v, err := c.VerifyReceipt(cmd.Context(), x.GetReceiptId())
	if err != nil {
		return fmt.Errorf("receipt %s does not verify: %w", x.GetReceiptId(), explain(err))
	}
	fmt.Fprintf(out, "Receipt %s verified: hash %s signed by %s\n", v.ReceiptID, v.Hash, v.KeyID)
	if x.GetStatus() == svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		return nil
	}
	// The receipt holds every object's outcome; the exit status says it did not all go.
	fmt.Fprintf(out, "Every object's outcome and error is in the receipt:\n  %s\n", cf.commandLine(false, "receipt", "get", x.GetReceiptId(), "-o", x.GetReceiptId()+".json"))
	return fmt.Errorf("execution %s ended %s: %d of %s failed", x.GetId(), enumName(x.GetStatus()), x.GetFailed(), plural(int(x.GetAttempted()), "asset"))
}
