/** Who is calling, as established by the credentials guard (res.locals.partner). */
export interface PartnerIdentity {
  keyId: string;
  subscriberId: string;
  plan: string;
}

export const PARTNER_PREFIX = '/api/v1/partner';
