package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/wire"
)

// connectHandler serves one method over Connect, gRPC and gRPC-Web. Messages are handled as
// proto.Message values made from the method's descriptor, so one handler serves every method.
func (s *Server) connectHandler(m *method) http.Handler {
	opts := []connect.HandlerOption{
		connect.WithSchema(m.desc),
		connect.WithCodec(protoCodec{}),
		connect.WithCodec(jsonCodec{}),
		connect.WithReadMaxBytes(int(s.cfg.MaxBodyBytes)),
		connect.WithRequestInitializer(func(_ connect.Spec, msg any) error {
			p, ok := msg.(*proto.Message)
			if !ok {
				return fmt.Errorf("unexpected request holder %T", msg)
			}
			*p = newMessage(m.desc.Input())
			return nil
		}),
	}
	if isNoSideEffects(m.desc) {
		opts = append(opts, connect.WithIdempotency(connect.IdempotencyNoSideEffects))
	}
	return connect.NewUnaryHandler(m.procedure, func(ctx context.Context, req *connect.Request[proto.Message]) (*connect.Response[proto.Message], error) {
		in := incoming{header: req.Header(), req: rpc.HTTPRequest(ctx)}
		out := s.invoke(ctx, m, in, func() (proto.Message, error) { return *req.Msg, nil })
		if out.problem != nil {
			err := connectError(out.problem, rpc.RequestID(ctx))
			for k, v := range out.header {
				err.Meta()[k] = v
			}
			return nil, err
		}
		if out.stream != nil {
			data, err := readWhole(out.stream)
			if err != nil {
				return nil, connectError(rpc.FromError(err), rpc.RequestID(ctx))
			}
			if hb, ok := out.msg.(*httpbody.HttpBody); ok {
				hb.Data = data
			}
			out.header.Del("Content-Length")
		}
		res := connect.NewResponse(&out.msg)
		for k, v := range out.header {
			res.Header()[k] = v
		}
		return res, nil
	}, opts...)
}

func isNoSideEffects(md protoreflect.MethodDescriptor) bool {
	opts, ok := md.Options().(*descriptorpb.MethodOptions)
	return ok && opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS
}

// unwrap returns the proto.Message behind what Connect hands a codec (a *proto.Message).
func unwrap(v any) (proto.Message, error) {
	switch m := v.(type) {
	case *proto.Message:
		return *m, nil
	case proto.Message:
		return m, nil
	}
	return nil, fmt.Errorf("%T is not a proto message", v)
}

// protoCodec is Connect's binary protobuf codec over our message holders.
type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }
func (protoCodec) Marshal(v any) ([]byte, error) {
	m, err := unwrap(v)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(m)
}
func (protoCodec) Unmarshal(data []byte, v any) error {
	m, err := unwrap(v)
	if err != nil {
		return err
	}
	return proto.Unmarshal(data, m)
}

// jsonCodec is Connect's JSON, spoken in the API's wire format rather than protojson, so a
// Connect JSON client sees exactly the REST resources.
type jsonCodec struct{}

func (jsonCodec) Name() string { return "json" }
func (jsonCodec) Marshal(v any) ([]byte, error) {
	m, err := unwrap(v)
	if err != nil {
		return nil, err
	}
	return wire.Marshal(m)
}
func (jsonCodec) Unmarshal(data []byte, v any) error {
	m, err := unwrap(v)
	if err != nil {
		return err
	}
	if err := wire.Unmarshal(data, m); err != nil {
		var we *wire.Error
		if errors.As(err, &we) {
			return connect.NewError(connect.CodeInvalidArgument, err)
		}
		return err
	}
	return nil
}

// maxConnectContent bounds vault content returned whole over Connect; REST streams any size.
const maxConnectContent = 64 << 20

// readWhole reads a stream for Connect clients, up to maxConnectContent.
func readWhole(rc io.ReadCloser) ([]byte, error) {
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxConnectContent+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConnectContent {
		return nil, rpc.NewProblem(http.StatusRequestEntityTooLarge, rpc.CodeTooLarge, "The content is larger than 64 MiB; download it over REST.")
	}
	return data, nil
}
