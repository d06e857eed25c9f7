package ipplan

import (
	"github.com/routekeeper/routekeeper/internal/finding"
)

// checkService checks the service ranges and the DNS service IP: an IPv4
// range must be smaller than a /12 (AKS), an IPv6 one no larger than a
// /108 (AKS's dual-stack documentation; kube-apiserver refuses more than
// 20 host bits, --service-cluster-ip-range, unless its newer allocator is
// on); the DNS IP must be a usable address of the range of its family.
func (a *analysis) checkService() {
	if svc := a.p.service; svc.IsValid() && svc.Bits() <= 12 {
		a.add(finding.Error, RuleServiceCIDRTooLarge, nil, map[string]string{"serviceCIDR": svc.String()},
			"service CIDR %s is /%d; it must be smaller than /12 (a prefix length of 13 or more)", svc, svc.Bits())
	}
	if svc := a.p.service6; svc.IsValid() && svc.Bits() < LargestIPv6ServiceCIDR {
		a.add(finding.Error, RuleServiceCIDRTooLarge, nil, map[string]string{"serviceCIDR": svc.String()},
			"IPv6 service CIDR %s is /%d; it can be no larger than /%d (AKS; kube-apiserver refuses more than 20 host bits)",
			svc, svc.Bits(), LargestIPv6ServiceCIDR)
	}
	dns := a.p.dns
	svc := a.p.service
	if dns.Is6() {
		svc = a.p.service6
	}
	values := map[string]string{"dnsServiceIP": dns.String(), "serviceCIDR": svc.String()}
	if !svc.IsValid() {
		a.add(finding.Error, RuleDNSIPOutsideServiceCIDR, nil, map[string]string{"dnsServiceIP": dns.String()},
			"DNS service IP %s has no service CIDR of its IP family", dns)
		return
	}
	lo, hi := bounds(svc)
	d := number(dns)
	v6 := dns.Is6()
	switch {
	case !svc.Contains(dns):
		a.add(finding.Error, RuleDNSIPOutsideServiceCIDR, nil, values,
			"DNS service IP %s is outside the service CIDR %s", dns, svc)
	case d == lo:
		a.add(finding.Error, RuleDNSIPReserved, nil, values,
			"DNS service IP %s is the network address of the service CIDR %s", dns, svc)
	case d == lo.Plus(1):
		a.add(finding.Error, RuleDNSIPReserved, nil, values,
			"DNS service IP %s is the first address of the service CIDR %s, which the kubernetes API service takes", dns, svc)
	case d == hi && !v6 && svc.Bits() < 31:
		a.add(finding.Error, RuleDNSIPReserved, nil, values,
			"DNS service IP %s is the broadcast address of the service CIDR %s, which Kubernetes never hands out", dns, svc)
	case d != lo.Plus(10) && lo.Plus(10).Cmp(hi) <= 0:
		a.add(finding.Info, RuleDNSIPNotTenth, nil, values,
			"DNS service IP %s is valid, but by convention it is the .10 address of the service CIDR (%s)", dns, lo.Plus(10).Addr(v6))
	}
}
