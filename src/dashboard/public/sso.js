// @ts-check
/**
 * Single sign-on for the dashboard (docs/enterprise.md#single-sign-on): whether the gateway offers
 * it, who is signed in, and logout. The session is an HttpOnly cookie this script never sees; it
 * reads only the CSRF token its mutating calls must echo.
 */

/** @typedef {{ sso: boolean, signed_in?: boolean, subject?: string, name?: string | null, role?: string, csrf_token?: string }} SsoSession */

/** @returns {Promise<SsoSession>} `{sso: false}` when the gateway has no SSO or cannot say */
export async function ssoSession() {
  try {
    const res = await fetch('auth/session', { credentials: 'same-origin', cache: 'no-store', headers: { accept: 'application/json' } });
    return res.ok ? await res.json() : { sso: false };
  } catch {
    return { sso: false };
  }
}

/** Ends the session at the gateway (server-side), so the cookie is worthless even if kept. @param {string} csrf */
export async function ssoLogout(csrf) {
  try {
    await fetch('auth/logout', { method: 'POST', credentials: 'same-origin', headers: { 'x-csrf-token': csrf } });
  } catch {
    // Signed out locally either way; the session expires on its own.
  }
}
