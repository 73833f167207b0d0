// URL checks shared by every request field that names where a customer is sent back (a
// checkout's callback_url, a payment method setup's or a portal session's return_url).

/**
 * True for an absolute http:// or https:// URL without credentials (`user:pw@` would be
 * shown to the customer and sent on by the browser). Any other text, a relative URL or
 * another scheme (`javascript:`, `data:`) is false.
 */
export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}
