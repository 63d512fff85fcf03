import type { FastifyPluginAsync } from "fastify";
import { retireFlow } from "@ax/coordinator";
import type { Db } from "@ax/store";

/** `POST /api/flows/:flow/retire`: AxFlowInUseError answers 409 with what still uses the flow. */
export function flowRetireRoute(db: Db): FastifyPluginAsync {
  return async (app) => {
    app.post<{ Params: { flow: string } }>("/api/flows/:flow/retire", async (request) => {
      const retired = await retireFlow(db, request.params.flow);
      return { ...retired, retiredAt: retired.retiredAt.toISOString() };
    });
  };
}
