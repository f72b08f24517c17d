package plugin

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// Handshake is the go-plugin handshake of protocol v1. The magic cookie is
// not a secret: it only stops a user from running a plugin binary by hand.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  providers.ProtocolVersion,
	MagicCookieKey:   "SVC_PROVIDER_PLUGIN",
	MagicCookieValue: "7d1f0a3c-provider-plugin-v1",
}

// pluginName is the name of the one plugin in the set.
const pluginName = "provider"

// chunkSize is the size of the content chunks of Fetch and Write streams.
// Larger chunks mean fewer messages; gRPC's 4 MiB default message limit
// caps it.
const chunkSize = 1 << 20

// maxMessageSize is the receive limit set on both sides; a page of
// MaxPageSize objects with long metadata stays well below it.
const maxMessageSize = 64 << 20

// Transport tuning for bulk content on a local socket: large HTTP/2 flow
// control windows (which also turn off gRPC's slow-starting window
// estimation) and large socket buffers, on both sides.
const (
	streamWindow = 16 << 20
	connWindow   = 32 << 20
	ioBuffer     = 1 << 20
)

func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.ReadBufferSize(ioBuffer),
		grpc.WriteBufferSize(ioBuffer),
	}
}

func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
		grpc.WithReadBufferSize(ioBuffer),
		grpc.WithWriteBufferSize(ioBuffer),
	}
}

func pluginSet(srv pluginpb.ProviderServiceServer) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		providers.ProtocolVersion: {pluginName: &grpcPlugin{server: srv}},
	}
}

// grpcPlugin is the go-plugin glue: it registers the server in the plugin
// process and returns the generated client on the host.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	server pluginpb.ProviderServiceServer
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterProviderServiceServer(s, p.server)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginpb.NewProviderServiceClient(c), nil
}
