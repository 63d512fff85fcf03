export { onEvent, type AxEvent, type AxEventName } from "@ax/coordinator";
