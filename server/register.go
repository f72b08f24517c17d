package server

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/server/internal/insightapi"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/server/internal/tenantapi"
)

// register installs the implemented methods; every other method answers 501.
func (s *Server) register() {
	handle(s, svcv1connect.AccountServiceDeleteAccountProcedure, s.deleteAccount)
	handle(s, svcv1connect.AccountServiceExportAccountProcedure, s.exportAccount)
	handle(s, svcv1connect.JobServiceGetJobProcedure, s.getJob)
	handle(s, svcv1connect.JobServiceListJobsProcedure, s.listJobs)
	handle(s, svcv1connect.JobServiceCancelJobProcedure, s.cancelJob)
	handle(s, svcv1connect.VaultServiceSearchVaultProcedure, s.searchVault)
	s.registerConnectFlow()
	s.install((&tenantapi.API{Scope: s.scope, Pager: s.pager, Now: s.cfg.Now, Billing: s.planBilling, Usage: s.store.Usage(),
		OwnsApplication: s.ownsApplication, EventLog: s.eventLog}).Handlers())
	s.install(s.platformAPI.Handlers())
	s.install((&insightapi.API{Scope: s.scope, Pager: s.pager, Meter: s.meter, Jobs: s.jobRunner}).Handlers())
}

// loadMethods builds the method table from every service of the svc.v1 package.
func (s *Server) loadMethods() error {
	var err error
	protoregistry.GlobalFiles.RangeFilesByPackage("svc.v1", func(fd protoreflect.FileDescriptor) bool {
		svcs := fd.Services()
		for i := range svcs.Len() {
			sd := svcs.Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				ep, _ := proto.GetExtension(md.Options(), svcv1.E_Endpoint).(*svcv1.Endpoint)
				if ep == nil {
					ep = &svcv1.Endpoint{}
				}
				m := &method{desc: md, procedure: "/" + string(sd.FullName()) + "/" + string(md.Name()), endpoint: ep}
				if f := md.Input().Fields().ByName("connection_id"); f != nil {
					m.connectionField = f
				}
				s.methods[m.procedure] = m
			}
		}
		return true
	})
	if len(s.methods) == 0 {
		err = errors.New("server: no svc.v1 services registered")
	}
	return err
}

// handle installs the implementation of a procedure.
func handle[Req, Res proto.Message](s *Server, procedure string, fn func(context.Context, Req) (Res, error)) {
	s.install(map[string]rpc.Handler{procedure: rpc.Handle(fn)})
}

// install installs implementations by procedure.
func (s *Server) install(hs map[string]rpc.Handler) {
	for procedure, h := range hs {
		m, ok := s.methods[procedure]
		if !ok {
			panic("server: no method " + procedure)
		}
		m.call = h
	}
}

// newMessage returns an empty message of the descriptor's generated Go type.
func newMessage(md protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(md)
}
