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
	"svc.dev/svc/server/internal/rpc"
)

// register installs the implemented methods; every other method answers 501.
func (s *Server) register() {
	handle(s, svcv1connect.AccountServiceDeleteAccountProcedure, s.deleteAccount)
	handle(s, svcv1connect.AccountServiceExportAccountProcedure, s.exportAccount)
	handle(s, svcv1connect.JobServiceGetJobProcedure, s.getJob)
	handle(s, svcv1connect.JobServiceListJobsProcedure, s.listJobs)
	handle(s, svcv1connect.JobServiceCancelJobProcedure, s.cancelJob)
	handle(s, svcv1connect.PlanServiceListPlansProcedure, s.listPlans)
	handle(s, svcv1connect.PlanServiceCreatePlanProcedure, s.createPlan)
	handle(s, svcv1connect.PlanServiceGetPlanProcedure, s.getPlan)
	handle(s, svcv1connect.PlanServiceListPlanObjectsProcedure, s.listPlanObjects)
	handle(s, svcv1connect.PlanServiceAuthorizePlanProcedure, s.authorizePlan)
	handle(s, svcv1connect.PlanServiceCancelPlanProcedure, s.cancelPlan)
	handle(s, svcv1connect.SourceServiceListSourcesProcedure, s.listSources)
	handle(s, svcv1connect.SourceServiceGetSourceProcedure, s.getSource)
	handle(s, svcv1connect.SourceServiceUpdateSourcePolicyProcedure, s.updateSourcePolicy)
	handle(s, svcv1connect.DestinationServiceCreateDestinationProcedure, s.createDestination)
	handle(s, svcv1connect.DestinationServiceListDestinationsProcedure, s.listDestinations)
	handle(s, svcv1connect.DestinationServiceGetDestinationProcedure, s.getDestination)
	handle(s, svcv1connect.ExecutionServiceListExecutionsProcedure, s.listExecutions)
	handle(s, svcv1connect.ExecutionServiceListExecutionStepsProcedure, s.listExecutionSteps)
	handle(s, svcv1connect.EventServiceListEventsProcedure, s.listEvents)
	handle(s, svcv1connect.ReceiptServiceGetReceiptProcedure, s.getReceipt)
	handle(s, svcv1connect.ReceiptServiceRestoreReceiptProcedure, s.restoreReceipt)
	handle(s, svcv1connect.VaultServiceListVaultObjectsProcedure, s.listVaultObjects)
	handle(s, svcv1connect.VaultServiceGetVaultObjectProcedure, s.getVaultObject)
	handle(s, svcv1connect.VaultServiceGetVaultObjectContentProcedure, s.getVaultObjectContent)
	handle(s, svcv1connect.VaultServiceExportManifestsProcedure, s.exportManifests)
	handle(s, svcv1connect.VaultServiceRestoreVaultObjectProcedure, s.restoreVaultObject)
	handle(s, svcv1connect.VaultServiceSearchVaultProcedure, s.searchVault)
	handle(s, svcv1connect.VaultServiceGetVaultCoverageProcedure, s.getVaultCoverage)
	handle(s, svcv1connect.CreatorServiceCreateCreatorSourceProcedure, s.createCreatorSource)
	handle(s, svcv1connect.CreatorServiceGetCreatorSourceProcedure, s.getCreatorSource)
	handle(s, svcv1connect.CreatorServiceListCreatorSourcesProcedure, s.listCreatorSources)
	handle(s, svcv1connect.CreatorServiceDeleteCreatorSourceProcedure, s.deleteCreatorSource)
	handle(s, svcv1connect.CreatorServiceUploadStatementProcedure, s.uploadStatement)
	handle(s, svcv1connect.CreatorServiceSyncCreatorProcedure, s.syncCreator)
	handle(s, svcv1connect.CreatorServiceListRevenueItemsProcedure, s.listRevenueItems)
	handle(s, svcv1connect.CreatorServiceGetRevenueItemProcedure, s.getRevenueItem)
	handle(s, svcv1connect.CreatorServiceListAnomaliesProcedure, s.listAnomalies)
	handle(s, svcv1connect.CreatorServiceGetAnomalyProcedure, s.getAnomaly)
	handle(s, svcv1connect.CreatorServiceDismissAnomalyProcedure, s.dismissAnomaly)
	handle(s, svcv1connect.CreatorServiceReopenAnomalyProcedure, s.reopenAnomaly)
	handle(s, svcv1connect.IntelServiceListMetersProcedure, s.listMeters)
	handle(s, svcv1connect.IntelServiceGetMeterProcedure, s.getMeter)
	handle(s, svcv1connect.IntelServiceActOnMeterProcedure, s.actOnMeter)
	handle(s, svcv1connect.IntelServiceListTrialsProcedure, s.listTrials)
	handle(s, svcv1connect.IntelServiceGetTrialProcedure, s.getTrial)
	handle(s, svcv1connect.IntelServiceDecideTrialProcedure, s.decideTrial)
	handle(s, svcv1connect.ExecutionServiceGetExecutionProcedure, s.getExecution)
	handle(s, svcv1connect.ExecutionServiceExecutePlanProcedure, s.executePlan)
	handle(s, svcv1connect.ExecutionServiceCancelExecutionProcedure, s.cancelExecution)
	s.registerConnectFlow()
	s.install(s.platformAPI.Handlers())
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
