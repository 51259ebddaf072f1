// A real OpenID Connect provider (the oidc-provider package) for the sign-on proof.
// Usage: node op.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI
// Every account signs in with any password; its groups are "devs" and, for "lead", "leads".
import Provider from "oidc-provider";

const [port, clientId, clientSecret, redirectUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code"],
      response_types: ["code"],
    },
  ],
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["preferred_username", "groups"] },
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({
      sub: id,
      email: `${id}@example.com`,
      email_verified: true,
      preferred_username: id,
      groups: id === "lead" ? ["devs", "leads"] : id === "nobody" ? [] : ["devs"],
    }),
  }),
  // The provider's default sign-in and consent pages, which take any password.
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => false },
  // ID tokens carry the claims, so the relying party needs no second request for them.
  conformIdTokenClaims: false,
});
provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`listening ${issuer}`);
});
