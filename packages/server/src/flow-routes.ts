import type { FastifyPluginAsync } from "fastify";
import { RETIRE_LIVE_MS, retireFlow } from "@ax/coordinator";
import { listFlowStates, type Db } from "@ax/store";
import { flowStatesQuery, parseQuery } from "./api-schemas.js";

/** `GET /api/flow-states` and `POST /api/flows/:flow/retire` (AxFlowInUseError answers 409 with what still uses the flow). */
export function flowRoutes(db: Db): FastifyPluginAsync {
  return async (app) => {
    app.get("/api/flow-states", async (request) => {
      const { retired } = parseQuery(flowStatesQuery, request.query);
      return { flows: await listFlowStates(db, { liveMs: RETIRE_LIVE_MS, retired }) };
    });

    app.post<{ Params: { flow: string } }>("/api/flows/:flow/retire", async (request) => {
      const retired = await retireFlow(db, request.params.flow);
      return { ...retired, retiredAt: retired.retiredAt.toISOString() };
    });
  };
}
