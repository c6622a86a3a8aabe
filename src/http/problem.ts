// RFC 9457 problem details: the bodies onceflow's HTTP parts answer with. `type` names the
// problem with a stable URI of the docs (a client matches on it, never on `detail`'s wording).
import type { HttpAnswer } from './request.js';

/** The problems the HTTP parts answer with, by the `type` URI's last segment. */
export type ProblemKind =
  | 'rate-limited'
  | 'idempotency-key-missing'
  | 'idempotency-key-invalid'
  | 'idempotency-key-in-use'
  | 'idempotency-key-reused'
  | 'idempotent-request-too-large';

const TITLES: Readonly<Record<ProblemKind, string>> = {
  'rate-limited': 'Too Many Requests',
  'idempotency-key-missing': 'Idempotency-Key is missing',
  'idempotency-key-invalid': 'Idempotency-Key is invalid',
  'idempotency-key-in-use': 'A request with this Idempotency-Key is being processed',
  'idempotency-key-reused': 'Idempotency-Key reused with another request',
  'idempotent-request-too-large': 'Content Too Large',
};

/** Where the problems are described: each kind is an anchor of docs/http.md. */
export const PROBLEM_BASE = 'https://github.com/onceflow/onceflow/blob/main/docs/http.md#';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** A problem answer: `status`, the problem's JSON body and its content type, plus `headers`. */
export function problem(
  kind: ProblemKind,
  status: number,
  detail: string,
  headers: Readonly<Record<string, string>> = {},
  extra: Readonly<Record<string, unknown>> = {},
): HttpAnswer {
  const body = JSON.stringify({ type: PROBLEM_BASE + kind, title: TITLES[kind], status, detail, ...extra });
  return { status, headers: { ...headers, 'content-type': PROBLEM_CONTENT_TYPE }, body };
}
