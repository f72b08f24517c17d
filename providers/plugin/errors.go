package plugin

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// errorCodes maps the sentinel errors that cross the plugin boundary to
// their wire code and gRPC status code.
var errorCodes = []struct {
	err  error
	code string
	grpc codes.Code
}{
	{providers.ErrVersionMismatch, "version_mismatch", codes.FailedPrecondition},
	{providers.ErrNotFound, "not_found", codes.NotFound},
	{providers.ErrUnsupported, "unsupported", codes.Unimplemented},
	{providers.ErrMarkerExpired, "marker_expired", codes.OutOfRange},
	{providers.ErrInvalidArgument, "invalid_argument", codes.InvalidArgument},
	{providers.ErrAlreadyExists, "already_exists", codes.AlreadyExists},
	// Before ErrPermission, which it wraps.
	{providers.ErrReauthRequired, "reauth_required", codes.Unauthenticated},
	{providers.ErrPermission, "permission_denied", codes.PermissionDenied},
	{providers.ErrTransient, "transient", codes.Unavailable},
	{providers.ErrInvalidData, "invalid_data", codes.DataLoss},
}

// statusFromError turns a provider's error into a gRPC status carrying an
// ErrorInfo, so the host can rebuild the typed error.
func statusFromError(err error) error {
	if err == nil {
		return nil
	}
	info := &pluginpb.ErrorInfo{Code: "internal"}
	code := codes.Unknown
	if errors.Is(err, errLaneUnavailable) {
		info.Code, code = laneUnavailable, codes.Unavailable
	}
	matched := info.Code != "internal"
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			info.Code, code = c.code, c.grpc
			matched = true
			break
		}
	}
	// A call that ran out of time (the host's deadline travels with it) or
	// was cancelled is reported as such, without provider details, so the
	// host classifies it as it classifies its own deadline: had it arrived
	// as a provider error, a hang would race the host's timer and surface
	// as an opaque error instead of ErrPluginTimeout.
	switch {
	case matched:
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	var vm *providers.VersionMismatchError
	if errors.As(err, &vm) {
		info.ObjectId, info.ExpectedVersion, info.ActualVersion = vm.ObjectID, vm.Expected, vm.Actual
	}
	st, derr := status.New(code, err.Error()).WithDetails(info)
	if derr != nil {
		return status.Error(code, err.Error())
	}
	return st.Err()
}

// providerError is an error a plugin reported, rebuilt on the host. Its
// message is the plugin's; it matches the sentinel with errors.Is.
type providerError struct {
	msg string
	err error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() error { return e.err }

// laneUnavailable is the ErrorInfo code of a call that named a content
// lane the plugin does not have (or has busy): the host drops the lane and
// makes the call again without one.
const laneUnavailable = "lane_unavailable"

// errLaneUnavailable is statusFromError's input for laneUnavailable.
var errLaneUnavailable = errors.New("content lane unavailable")

// laneRejected reports whether err is a plugin's laneUnavailable answer.
func laneRejected(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*pluginpb.ErrorInfo); ok && info.GetCode() == laneUnavailable {
			return true
		}
	}
	return false
}

// errorFromStatus rebuilds a provider error from a status that carries an
// ErrorInfo. It returns nil when the status has none (a transport failure).
func errorFromStatus(st *status.Status) error {
	for _, d := range st.Details() {
		if info, ok := d.(*pluginpb.ErrorInfo); ok {
			return errorFromInfo(info, st.Message())
		}
	}
	return nil
}

// errorFromInfo rebuilds a provider error from its ErrorInfo and message.
func errorFromInfo(info *pluginpb.ErrorInfo, msg string) error {
	if info.GetCode() == "version_mismatch" {
		return &providers.VersionMismatchError{ObjectID: info.GetObjectId(), Expected: info.GetExpectedVersion(), Actual: info.GetActualVersion()}
	}
	for _, c := range errorCodes {
		if c.code == info.GetCode() {
			return &providerError{msg: msg, err: c.err}
		}
	}
	return errors.New(msg)
}

// maxItemMessage bounds the message of one item's error in a batch
// response (the protocol's limit).
const maxItemMessage = 8192

// itemError encodes the error of one item of a batch: its ErrorInfo, as
// statusFromError would carry it, and its message.
func itemError(err error) (*pluginpb.ErrorInfo, string) {
	info := &pluginpb.ErrorInfo{Code: "internal"}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			info.Code = c.code
			break
		}
	}
	var vm *providers.VersionMismatchError
	if errors.As(err, &vm) {
		info.ObjectId, info.ExpectedVersion, info.ActualVersion = vm.ObjectID, vm.Expected, vm.Actual
	}
	msg := err.Error()
	if len(msg) > maxItemMessage {
		msg = strings.ToValidUTF8(msg[:maxItemMessage], "")
	}
	return info, msg
}
