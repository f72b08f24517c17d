package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

// newExecutionsCmd returns "svc executions": list, read, follow and page through the steps of
// executions on a running server.
func newExecutionsCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{Use: "executions", Short: "List, show and follow executions"}
	cf.register(cmd)

	var planID string
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List executions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			req := &svcv1.ListExecutionsRequest{Limit: proto.Int32(int32(min(max(limit, 1), 200)))}
			if planID != "" {
				req.PlanId = &planID
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EXECUTION\tPLAN\tSTATUS\tASSETS\tFAILED\tPRESERVED\tREMOVED\tRECEIPT\tCREATED")
			n := 0
			for x, err := range c.ListExecutions(cmd.Context(), req) {
				if err != nil {
					return explain(err)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.GetId(), x.GetPlanId(), enumName(x.GetStatus()),
					count(int(x.GetAttempted())), count(int(x.GetFailed())), bytesIEC(x.GetBytesPreserved()), bytesIEC(x.GetBytesRemoved()),
					receiptOrUnknown(x.GetReceiptId()), x.GetCreatedAt().AsTime().Format("2006-01-02 15:04"))
				if n++; limit > 0 && n == limit {
					break
				}
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&planID, "plan", "", "only the executions of this plan")
	list.Flags().IntVar(&limit, "limit", 50, "list at most this many (0: all, page by page)")

	get := &cobra.Command{
		Use:   "get EXECUTION_ID",
		Short: "Show an execution's status, counters and errors",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			res, err := c.Executions.GetExecution(cmd.Context(), connect.NewRequest(&svcv1.GetExecutionRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			x := res.Msg
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Execution %s of plan %s\n", x.GetId(), x.GetPlanId())
			fmt.Fprintf(out, "  receipt  %s\n", receiptOrUnknown(x.GetReceiptId()))
			writeExecutionSummary(out, x)
			return nil
		},
	}

	var poll time.Duration
	watch := &cobra.Command{
		Use:   "watch EXECUTION_ID",
		Short: "Follow an execution until it ends, then verify its receipt",
		Long: `Watch follows an execution with the progress svc apply shows, until it has its receipt,
then verifies the receipt offline against the server's published keys. It exits with status 1
when the execution ended partially_completed, failed or cancelled.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			res, err := c.Executions.GetExecution(ctx, connect.NewRequest(&svcv1.GetExecutionRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			p, err := c.Plans.GetPlan(ctx, connect.NewRequest(&svcv1.GetPlanRequest{Id: res.Msg.GetPlanId()}))
			if err != nil {
				return explain(err)
			}
			x, err := follow(ctx, newProgress(cmd.OutOrStdout(), p.Msg), c, res.Msg, poll)
			if err != nil {
				return err
			}
			return finishExecution(cmd, &cf, c, x)
		},
	}
	watch.Flags().DurationVar(&poll, "poll", 250*time.Millisecond, "how often to refresh the progress")

	var stepLimit int
	steps := &cobra.Command{
		Use:   "steps EXECUTION_ID",
		Short: "List every step of an execution, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tASSET\tSTEP\tSTATUS\tFROM\tTO")
			n := 0
			req := &svcv1.ListExecutionStepsRequest{Id: args[0], Limit: proto.Int32(200)}
			for s, err := range client.All[*svcv1.ExecutionStep](cmd.Context(), c.Executions.ListExecutionSteps, req) {
				if err != nil {
					return explain(err)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.GetAt().AsTime().Format(time.RFC3339), s.GetAssetId(), s.GetStep(), s.GetStatus(),
					enumName(s.GetFromState()), enumName(s.GetToState()))
				if n++; stepLimit > 0 && n == stepLimit {
					break
				}
			}
			return tw.Flush()
		},
	}
	steps.Flags().IntVar(&stepLimit, "limit", 0, "list at most this many steps (0: all)")
	cmd.AddCommand(list, get, watch, steps)
	return cmd
}
