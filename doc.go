// Package svc embeds svc in a Go program: the whole loop of plan, authorize, execute, verify
// that the hosted API serves, as Go methods with Go types, on a data directory of its own (or
// in memory for tests), with providers registered in process.
//
//	import (
//		"svc.dev/svc"                      // Open, Instance, Scope, SourceSpec, PlanRequest
//		svcv1 "svc.dev/svc/gen/svc/v1"     // the API's types: Plan, Execution, PlanIntent, ...
//		"svc.dev/svc/providers"            // provider names and Config
//	)
//
//	sv, err := svc.Open(ctx, dir, nil)        // bbolt, the local vault, the receipt keys
//	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": folder}})
//	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
//	p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
//	x, err := sv.Execute(ctx, p.PlanId, nil)
//	x, err = sv.Wait(ctx, x.Id)               // an error wrapping ErrNotCompleted unless it completed
//	v, err := sv.VerifyReceipt(ctx, x.GetReceiptId())
//
// An Instance acts for one tenant by default (DefaultTenant); Instance.Tenant gives the same
// methods scoped to another, which is how the hosted server uses this package: it
// authenticates a request, checks the caller's grant, and calls the tenant's Scope. The
// methods are Scope's, which Instance embeds: go doc finds them as Scope.Wait, Scope.BuildPlan
// and so on (go doc svc.dev/svc Scope lists them all).
//
// # Storage
//
// Everything is kept through the storage seam (svc.dev/svc/storage, named here as Store):
// Open uses the bbolt implementation in svc.dev/svc/storage/bolt unless Options.Store gives another.
//
// # Stability
//
// Not yet stable: the methods and options may still change before v1 of the module; see
// docs/stability.md and docs/embedding.md.
package svc
