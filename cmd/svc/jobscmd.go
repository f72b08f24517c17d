package main

import (
	"fmt"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/wire"
)

// newJobsCmd reads and cancels jobs: the long tasks of an account (seed, scan, export,
// deletion, ...).
func newJobsCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{Use: "jobs", Short: "List, show and cancel jobs (exports, deletions, scrubs, the dev seed)"}
	cf.register(cmd)
	client := func() (svcv1connect.JobServiceClient, error) {
		c, err := cf.resolveClient()
		if err != nil {
			return nil, err
		}
		return c.Jobs, nil
	}
	var kind, status string
	list := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first (id, kind, status, progress, created)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			req := &svcv1.ListJobsRequest{}
			if kind != "" {
				n, ok := wire.ParseEnum(svcv1.JobKind(0).Descriptor(), kind)
				if !ok {
					return fmt.Errorf("--kind %q: not a job kind", kind)
				}
				k := svcv1.JobKind(n)
				req.Kind = &k
			}
			if status != "" {
				n, ok := wire.ParseEnum(svcv1.JobStatus(0).Descriptor(), status)
				if !ok {
					return fmt.Errorf("--status %q: not a job status", status)
				}
				st := svcv1.JobStatus(n)
				req.Status = &st
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tKIND\tSTATUS\tPROGRESS\tCREATED")
			for {
				res, err := c.ListJobs(cmd.Context(), connect.NewRequest(req))
				if err != nil {
					return explain(err)
				}
				for _, j := range res.Msg.GetData() {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d%%\t%s\n", j.GetId(), enumName(j.GetKind()), enumName(j.GetStatus()), j.GetProgress(),
						j.GetCreatedAt().AsTime().UTC().Format("2006-01-02 15:04:05"))
				}
				if res.Msg.NextCursor == nil {
					return w.Flush()
				}
				req.Cursor = res.Msg.NextCursor
			}
		},
	}
	list.Flags().StringVar(&kind, "kind", "", "only jobs of this kind (scan, export, deletion, seed, ...)")
	list.Flags().StringVar(&status, "status", "", "only jobs in this status (queued, running, succeeded, failed, cancelled)")
	show := func(cmd *cobra.Command, j *svcv1.Job) error {
		data, err := wire.Marshal(j)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), string(data))
		return nil
	}
	get := &cobra.Command{
		Use:   "get JOB_ID",
		Short: "Show a job as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			res, err := c.GetJob(cmd.Context(), connect.NewRequest(&svcv1.GetJobRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			return show(cmd, res.Msg)
		},
	}
	cancel := &cobra.Command{
		Use:   "cancel JOB_ID",
		Short: "Cancel a queued or running job (cancelling the account's deletion keeps the account)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client()
			if err != nil {
				return err
			}
			res, err := c.CancelJob(cmd.Context(), connect.NewRequest(&svcv1.CancelJobRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			return show(cmd, res.Msg)
		},
	}
	cmd.AddCommand(list, get, cancel)
	return cmd
}
