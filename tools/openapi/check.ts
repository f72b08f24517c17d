// Type-checks the TypeScript type set that openapi-typescript generates from the served
// OpenAPI document (scripts/openapi-check writes gen/svc-api.d.ts first): requests, responses
// and problem codes must come out typed, so a client in TypeScript gets typed errors too.
import type { components, operations, paths } from "./gen/svc-api";

type Problem = components["schemas"]["Problem"];

// A problem document has the RFC 9457 members and the field errors.
const notFound: Problem = {
  type: "https://svc.dev/problems/not_found",
  title: "Not found",
  status: 404,
  detail: "The resource does not exist.",
  code: "not_found",
  request_id: "req_1",
  errors: [{ path: "id", message: "is not a plan id" }],
};

// Each operation's error responses carry their codes as a union.
type AuthorizeConflict =
  operations["PlanService_AuthorizePlan"]["responses"][409]["content"]["application/problem+json"]["code"];
const stale: AuthorizeConflict = "plan_stale";
// @ts-expect-error: "gone" is no code AuthorizePlan answers 409 with.
const gone: AuthorizeConflict = "gone";

type StepUp =
  operations["PlanService_AuthorizePlan"]["responses"][403]["content"]["application/problem+json"]["code"];
const stepUp: StepUp = "step_up_required";

// Success bodies are typed from the messages.
type Plan = paths["/v1/plans/{id}"]["get"]["responses"][200]["content"]["application/json"];
function planHash(p: Plan): string | null | undefined {
  return p.hash;
}

// 429 documents Retry-After.
type Limited = operations["PlanService_ListPlans"]["responses"][429]["headers"];
const limited: Limited = { "Retry-After": 1, "RateLimit-Limit": 10, "RateLimit-Remaining": 0, "RateLimit-Reset": 1 };

export { notFound, stale, gone, stepUp, planHash, limited };
