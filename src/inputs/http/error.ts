// A refusal of the HTTP input: the status and JSON answer the client gets, and the bounded reason
// it is counted under (intake_relay_http_input_refused_total).

/** Why a request was refused (`http_input_refused_total{reason}`): every one pre-created at 0. */
export const REASONS = [
  'invalid_json', 'too_deep', 'path_not_found', 'not_a_list', 'body_too_large', 'too_many_events', 'unsupported_encoding',
  'unsupported_media_type', 'method_not_allowed', 'not_found', 'unauthorized', 'throttled', 'over_budget', 'shutdown',
  'bad_request', 'slow_client', 'client_closed', 'not_delivered',
] as const;
export type Reason = (typeof REASONS)[number];

export class HttpError extends Error {
  readonly status: number;
  readonly reason: Reason;
  readonly headers: Record<string, string>;
  constructor(status: number, reason: Reason, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.headers = headers;
  }
}
