package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"connectrpc.com/connect"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/receipt"
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
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.resolve(); err != nil {
				return err
			}
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			hc := cf.httpClient()
			plans := svcv1connect.NewPlanServiceClient(hc, cf.server)
			execs := svcv1connect.NewExecutionServiceClient(hc, cf.server)
			p, err := plans.GetPlan(ctx, connect.NewRequest(&svcv1.GetPlanRequest{Id: args[0], ConnectionId: cf.connectionID()}))
			if err != nil {
				return explain(err)
			}
			if p.Msg.GetState() == svcv1.PlanState_PLAN_STATE_VALIDATED && hash != "" {
				if p, err = plans.AuthorizePlan(ctx, connect.NewRequest(&svcv1.AuthorizePlanRequest{Id: args[0], PlanHash: hash, ConnectionId: cf.connectionID()})); err != nil {
					return explain(err)
				}
			}
			res, err := execs.ExecutePlan(ctx, connect.NewRequest(&svcv1.ExecutePlanRequest{Id: args[0], ConnectionId: cf.connectionID()}))
			if err != nil {
				return explain(err)
			}
			x := res.Msg
			fmt.Fprintf(out, "Execution %s of plan %s (%d objects)\n", x.GetId(), args[0], len(p.Msg.GetObjects()))
			x, err = follow(ctx, out, execs, x, p.Msg, cf.connectionID(), poll)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\n%s: %d attempted, %d completed, %d failed; %s preserved, %s removed, %s written to destinations\n", enumName(x.GetStatus()),
				x.GetAttempted(), x.GetCompleted(), x.GetFailed(), bytesIEC(x.GetBytesPreserved()), bytesIEC(x.GetBytesRemoved()), bytesIEC(x.GetBytesTransferred()))
			for _, e := range x.GetErrors() {
				fmt.Fprintf(out, "  %s\n", e)
			}
			return verifyServedReceipt(ctx, out, hc, cf, x.GetReceiptId())
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&hash, "hash", "", "authorize the plan with this hash first, if it is not authorized yet")
	cmd.Flags().DurationVar(&poll, "poll", 250*time.Millisecond, "how often to refresh the progress")
	return cmd
}

// follow polls an execution until it has a receipt, drawing progress over the plan's bytes.
func follow(ctx context.Context, out io.Writer, execs svcv1connect.ExecutionServiceClient, x *svcv1.Execution, p *svcv1.Plan, cxn *string, poll time.Duration) (*svcv1.Execution, error) {
	total := p.GetProjection().GetBytesToPreserve() + p.GetProjection().GetBytesToTransfer()
	if total == 0 {
		total = 1
	}
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(out), progressbar.OptionShowBytes(true),
		progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionUseIECUnits(true))
	objects := len(p.GetObjects())
	for {
		bar.Describe(fmt.Sprintf("%d/%d assets", x.GetCompleted()+x.GetFailed(), objects))
		bar.Set64(min(total, x.GetBytesPreserved()+x.GetBytesTransferred()))
		if x.GetReceiptId() != "" {
			bar.Finish()
			return x, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
		res, err := execs.GetExecution(ctx, connect.NewRequest(&svcv1.GetExecutionRequest{Id: x.GetId(), ConnectionId: cxn}))
		if err != nil {
			return nil, explain(err)
		}
		x = res.Msg
	}
}

// verifyServedReceipt fetches a receipt's exact bytes and the published keys, and verifies it
// offline.
func verifyServedReceipt(ctx context.Context, out io.Writer, hc *http.Client, cf clientFlags, id string) error {
	get := func(path string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", cf.server+path, nil)
		if err != nil {
			return nil, err
		}
		res, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, body)
		}
		return body, err
	}
	path := "/v1/receipts/" + url.PathEscape(id)
	if c := cf.connectionID(); c != nil {
		path += "?connection_id=" + url.QueryEscape(*c)
	}
	raw, err := get(path)
	if err != nil {
		return err
	}
	keys, err := get("/.well-known/svc-receipts.json")
	if err != nil {
		return err
	}
	v, err := receipt.Verify(raw, keys)
	if err != nil {
		return fmt.Errorf("receipt %s does not verify: %w", id, err)
	}
	fmt.Fprintf(out, "Receipt %s verified: hash %s signed by %s\n", v.ReceiptID, v.Hash, v.KeyID)
	return nil
}
