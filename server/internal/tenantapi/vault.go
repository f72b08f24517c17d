package tenantapi

import (
	"context"
	"google.golang.org/protobuf/types/known/timestamppb"
	"io"
	"mime"
	"net/http"
	"strconv"

	"google.golang.org/genproto/googleapis/api/httpbody"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/manifest"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/vault"
)

func (a *API) listVaultObjects(ctx context.Context, req *svcv1.ListVaultObjectsRequest) (*svcv1.ListVaultObjectsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.VaultServiceListVaultObjectsProcedure, req)
	if err != nil {
		return nil, err
	}
	objs, more, err := a.Scope(rpc.From(ctx)).ListVaultObjects(ctx, svc.VaultFilter{SourceID: req.SourceId, State: req.State}, after, limit)
	if err != nil {
		return nil, err
	}
	out := &svcv1.ListVaultObjectsResponse{Data: []*svcv1.VaultObject{}}
	for i := range objs {
		out.Data = append(out.Data, objs[i].Proto())
	}
	if more && len(objs) > 0 {
		out.NextCursor = a.Pager.Next(binding, objs[len(objs)-1].ID)
	}
	return out, nil
}

func (a *API) getVaultObject(ctx context.Context, req *svcv1.GetVaultObjectRequest) (*svcv1.VaultObject, error) {
	o, err := a.Scope(rpc.From(ctx)).VaultObject(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return o.Proto(), nil
}

// getVaultObjectContent opens the verified content; the REST writer streams it.
func (a *API) getVaultObjectContent(ctx context.Context, req *svcv1.GetVaultObjectRequest) (*httpbody.HttpBody, error) {
	c := rpc.From(ctx)
	rc, o, err := a.Scope(c).OpenVaultObject(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	c.Header.Set("Content-Length", strconv.FormatInt(o.SizeBytes, 10))
	c.Header.Set("Digest", "sha-256="+o.SHA256.String())
	contentHeaders(c.Header, o)
	c.Stream = rc
	return &httpbody.HttpBody{ContentType: "application/octet-stream"}, nil
}

// contentHeaders make vault content inert in a browser: whatever a user's file holds (an HTML
// page, an SVG with script), it is served as an opaque download that is never sniffed,
// rendered or scripted on the API's origin. The original type stays in the object's metadata
// (mime_type) and in Svc-Content-Type.
func contentHeaders(h http.Header, o vault.Object) {
	name := o.Name
	if name == "" {
		name = o.ID
	}
	disp := mime.FormatMediaType("attachment", map[string]string{"filename": name})
	if disp == "" { // a name mime cannot encode
		disp = mime.FormatMediaType("attachment", map[string]string{"filename": o.ID})
	}
	h.Set("Content-Disposition", disp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "private, no-store")
	if o.MIMEType != "" {
		h.Set("Svc-Content-Type", o.MIMEType)
	}
}

// exportManifests returns the tenant's manifests as one bundle (spec #16), limited to the
// sources of a connection's grant. Over REST the bundle is streamed (manifest.WriteBundle: one
// manifest in memory at a time, read from the store in short transactions), so a tenant's
// export costs constant memory; Connect and gRPC clients get the message built in memory.
func (a *API) exportManifests(ctx context.Context, _ *svcv1.ExportManifestsRequest) (*svcv1.ManifestBundle, error) {
	c := rpc.From(ctx)
	t := a.Scope(c)
	var keep func(*svcv1.Manifest) bool // every manifest the scope reaches
	if !c.REST {
		ms, err := t.Manifests(ctx, keep)
		if err != nil {
			return nil, err
		}
		return manifest.Bundle(c.Tenant.String(), a.Now().UTC(), ms)
	}
	exp, err := t.PrepareManifestExport(ctx, keep) // the count, before the response starts
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := exp.WriteTo(context.WithoutCancel(ctx), pw)
		pw.CloseWithError(err)
	}()
	c.Header.Set("Content-Type", "application/json")
	c.Stream = pr
	return &svcv1.ManifestBundle{}, nil
}

// restoreVaultObject builds a draft plan that restores a vault object (spec #19): to its
// original source, at the original path or at path; or, with destination_id, to that
// destination, at path or where the destination's path template puts the original. The plan
// is authorized and executed like any other (svc.Scope.RestoreObject builds it).
func (a *API) restoreVaultObject(ctx context.Context, req *svcv1.RestoreVaultObjectRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	opts := svc.RestoreOptions{DestinationID: req.GetDestinationId(), Path: req.GetPath(), PathSet: req.Path != nil}
	var err error
	if opts.Billing, err = a.Billing(ctx, c); err != nil {
		return nil, err
	}
	return a.Scope(c).RestoreVaultObject(ctx, req.GetId(), &opts)
}

// getVaultCoverage serves the tenant's verification coverage (GET /v1/vault/coverage).
func (a *API) getVaultCoverage(ctx context.Context, _ *svcv1.GetVaultCoverageRequest) (*svcv1.VaultCoverage, error) {
	cv, err := a.Scope(rpc.From(ctx)).VaultCoverage(ctx)
	if err != nil {
		return nil, err
	}
	return coverageProto(cv), nil
}

// coverageProto is a vault's coverage in the API's terms.
func coverageProto(cv vault.Coverage) *svcv1.VaultCoverage {
	out := &svcv1.VaultCoverage{At: timestamppb.New(cv.At), Objects: cv.Objects, Bytes: cv.Bytes,
		Never: cv.Never, NeverBytes: cv.NeverBytes, Corrupt: cv.Corrupt, Windows: []*svcv1.VaultCoverageWindow{}}
	for _, w := range cv.Windows {
		out.Windows = append(out.Windows, &svcv1.VaultCoverageWindow{Days: int32(w.Days), Objects: w.Objects, Bytes: w.Bytes,
			ObjectShare: w.ObjectShare, ByteShare: w.ByteShare})
	}
	return out
}
