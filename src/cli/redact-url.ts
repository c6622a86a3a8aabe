// Credentials out of what the CLI prints: a `--redis` URL carries its password in the user info
// (`redis://user:password@host`) or in the query (`?password=...`, which ioredis reads as an
// option), and that URL ends up in option errors, connection errors and worker messages.

// `scheme://userinfo@`: the user info ends at the last `@` before the host, and holds no `/`, `?`,
// `#` or white space (a URL parser ends the authority at those), so the greedy match stops at the
// right `@` for a password with `@` in it.
const USER_INFO = /([a-z][a-z0-9+.-]*:\/\/)([^\s/?#]*)@/gi;
// A query parameter whose name says password (`password`, `sentinelPassword`, ...). Its value
// runs to the next `&`, `#` or space, less a `:` that ends it before a space or the end: in a
// message (`failed on postgres://h/db?password=x: reason`) that colon is the message's own.
const QUERY_PASSWORD = /([?&][^=&\s#]*password[^=&\s#]*=)[^&\s#]*?(?=:\s|:$|[&\s#]|$)/gi;
// A value with no scheme that starts with user info (`user:password@host:6379`).
const BARE_USER_INFO = /^([^\s/?#:@]*):[^\s/?#]*@/;

/** The user info with its password part replaced: `user:***`, `:***`; a lone user name is kept. */
function redactUserInfo(userInfo: string): string {
  const colon = userInfo.indexOf(':');
  return colon === -1 ? userInfo : `${userInfo.slice(0, colon)}:***`;
}

/**
 * `text` (a URL, or a message holding URLs) with every password replaced by `***`: the password
 * of each URL's user info (the user name is kept: it names the account, it opens nothing) and every
 * query parameter named like a password. Text without credentials comes back unchanged.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     redactUrl('redis://app:s3cret@db:6379/2'); // 'redis://app:***@db:6379/2'
 *     redactUrl('cannot connect to rediss://:s3cret@db?password=s3cret'); // 'cannot connect to rediss://:***@db?password=***'
 */
export function redactUrl(text: string): string {
  return text
    .replace(USER_INFO, (_match, scheme: string, userInfo: string) => `${scheme}${redactUserInfo(userInfo)}@`)
    .replace(QUERY_PASSWORD, '$1***')
    .replace(BARE_USER_INFO, '$1:***@');
}
