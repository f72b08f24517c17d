package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/wire"
)

// newPlanCmd returns "svc plan": create, show, list, authorize and cancel plans on a running
// server, with a readable summary of what a plan would do.
func newPlanCmd() *cobra.Command {
	var cf clientFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Create and review plans on a running server",
	}
	cf.register(cmd)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the plan as JSON instead of a summary")
	var cl *client.Client
	plans := func() (svcv1connect.PlanServiceClient, error) {
		c, err := cf.resolveClient()
		if err != nil {
			return nil, err
		}
		cl = c
		return c.Plans, nil
	}
	show := func(cmd *cobra.Command, p *svcv1.Plan) error {
		if asJSON {
			b, err := wire.Marshal(p)
			if err != nil {
				return err
			}
			var pretty map[string]any
			json.Unmarshal(b, &pretty)
			out, _ := json.MarshalIndent(pretty, "", "  ")
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return err
		}
		if err := renderPlan(cmd.OutOrStdout(), p, sourceLabels(cmd.Context(), cl)); err != nil {
			return err
		}
		writeNextSteps(cmd.OutOrStdout(), &cf, p, "To authorize and apply it:")
		return nil
	}

	var (
		intent, destination, policyArg string
		sources                        []string
		noPreservation                 bool
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Build a plan (nothing changes at the providers) and print what it would do",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := plans()
			if err != nil {
				return err
			}
			n, ok := wire.ParseEnum(svcv1.PlanIntent(0).Descriptor(), intent)
			if !ok {
				return fmt.Errorf("--intent must be one of %s", strings.Join(wire.EnumValues(svcv1.PlanIntent(0).Descriptor()), ", "))
			}
			req := &svcv1.CreatePlanRequest{Intent: svcv1.PlanIntent(n), SourceIds: sources,
				PreservationRequired: proto.Bool(!noPreservation)}
			if destination != "" {
				req.DestinationId = &destination
			}
			if policyArg != "" {
				if req.Policy, err = readPolicy(policyArg); err != nil {
					return err
				}
			}
			res, err := c.CreatePlan(cmd.Context(), connect.NewRequest(req))
			if err != nil {
				return explain(err)
			}
			return show(cmd, res.Msg)
		},
	}
	create.Flags().StringVar(&intent, "intent", "svc", "svc, rescue, export, migrate, unsubscribe or simulation")
	create.Flags().StringSliceVar(&sources, "source", nil, "source id to plan over (repeatable; default all connected sources)")
	create.Flags().StringVar(&destination, "destination", "", "destination id, for export and migrate")
	create.Flags().StringVar(&policyArg, "policy", "", "a source policy overriding the sources' own: JSON, or @FILE")
	create.Flags().BoolVar(&noPreservation, "no-preservation", false, "do not require vaulting before removal")

	get := &cobra.Command{
		Use:   "show PLAN_ID",
		Short: "Print a plan",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := plans()
			if err != nil {
				return err
			}
			res, err := c.GetPlan(cmd.Context(), connect.NewRequest(&svcv1.GetPlanRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			return show(cmd, res.Msg)
		},
	}

	var hash string
	authorize := &cobra.Command{
		Use:   "authorize PLAN_ID --hash HASH",
		Short: "Authorize a plan whose hash you reviewed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := plans()
			if err != nil {
				return err
			}
			res, err := c.AuthorizePlan(cmd.Context(), connect.NewRequest(&svcv1.AuthorizePlanRequest{Id: args[0], PlanHash: hash}))
			if err != nil {
				return explain(err)
			}
			return show(cmd, res.Msg)
		},
	}
	authorize.Flags().StringVar(&hash, "hash", "", "the plan hash you reviewed (svc plan show prints it)")
	authorize.MarkFlagRequired("hash")

	cancel := &cobra.Command{
		Use:   "cancel PLAN_ID",
		Short: "Cancel a plan that has not started executing",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := plans()
			if err != nil {
				return err
			}
			res, err := c.CancelPlan(cmd.Context(), connect.NewRequest(&svcv1.CancelPlanRequest{Id: args[0]}))
			if err != nil {
				return explain(err)
			}
			return show(cmd, res.Msg)
		},
	}

	var listLimit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List plans, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			page := int32(200)
			if listLimit > 0 && listLimit < 200 {
				page = int32(listLimit)
			}
			var ps []*svcv1.Plan
			for p, err := range c.ListPlans(cmd.Context(), &svcv1.ListPlansRequest{Limit: proto.Int32(page)}) {
				if err != nil {
					return explain(err)
				}
				if ps = append(ps, p); listLimit > 0 && len(ps) == listLimit {
					break
				}
			}
			return renderPlanList(cmd.OutOrStdout(), ps)
		},
	}
	list.Flags().IntVar(&listLimit, "limit", 50, "list at most this many plans (0: all, page by page)")
	cmd.AddCommand(create, get, authorize, cancel, list)
	return cmd
}

func readPolicy(arg string) (*svcv1.SourcePolicy, error) {
	data := []byte(arg)
	if name, ok := strings.CutPrefix(arg, "@"); ok {
		var err error
		if data, err = os.ReadFile(name); err != nil {
			return nil, fmt.Errorf("--policy: %w", err)
		}
	}
	var pol svcv1.SourcePolicy
	if err := wire.Unmarshal(data, &pol); err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	return &pol, nil
}

// sourceLabels names the caller's sources for a summary. A summary is still right without
// them (sources then show by id), so a failed listing leaves them out.
func sourceLabels(ctx context.Context, c *client.Client) labeller {
	labels := labeller{}
	if c == nil {
		return labels
	}
	for s, err := range c.ListSources(ctx, nil) {
		if err != nil {
			return labels
		}
		labels[s.GetId()] = s.GetDisplayName()
	}
	return labels
}
