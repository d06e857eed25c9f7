package network

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Virtual network peerings: the child resource
// virtualNetworks/{vnet}/virtualNetworkPeerings/{name}, kept inline in the
// network's document (properties.virtualNetworkPeerings, as ARM lists
// them) and written with the network's long-running operations, like
// subnets. What depends on the remote network is computed when a peering
// is read: peeringState (Connected when the remote network has a peering
// back, Initiated before it has, Disconnected after it deleted it),
// peeringSyncLevel and remoteVirtualNetworkAddressSpace.

const (
	ChildPeerings   = "virtualNetworkPeerings"
	ARMTypePeering  = "Microsoft.Network/virtualNetworks/virtualNetworkPeerings"
	peeringChildPfx = ChildPeerings + "/" // the child name of a peering delete
)

var peeringKind = childKind[*armnetwork.VirtualNetwork, *armnetwork.VirtualNetworkPeering]{
	parent: &vnetParent, child: ChildPeerings, opPrefix: peeringChildPfx,
	items: func(v *armnetwork.VirtualNetwork) *[]*armnetwork.VirtualNetworkPeering {
		return &v.Properties.VirtualNetworkPeerings
	},
	name: func(p *armnetwork.VirtualNetworkPeering) string {
		if p == nil {
			return ""
		}
		return api.Str(p.Name)
	},
	id:      func(p *armnetwork.VirtualNetworkPeering) string { return api.Str(p.ID) },
	etag:    func(p *armnetwork.VirtualNetworkPeering) string { return api.Str(p.Etag) },
	setEtag: func(p *armnetwork.VirtualNetworkPeering, etag string) { p.Etag = api.Ptr(etag) },
	deleting: func(p *armnetwork.VirtualNetworkPeering) {
		if p.Properties != nil {
			p.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateDeleting)
		}
	},
	view: viewStoredPeering,
}

type peeringPut = childPut[armnetwork.VirtualNetworkPeering, *armnetwork.VirtualNetwork, *armnetwork.VirtualNetworkPeering]

// viewStoredPeering is viewPeering with the remote network read from tx.
func viewStoredPeering(tx *store.Txn, v *armnetwork.VirtualNetwork, p *armnetwork.VirtualNetworkPeering) error {
	if p == nil {
		return nil
	}
	remote, err := loadVNet(tx, PeeringRemote(p))
	if err != nil {
		return err
	}
	viewPeering(v, p, remote)
	return nil
}

// PeeringRemote is the ID of a peering's remote network.
func PeeringRemote(p *armnetwork.VirtualNetworkPeering) string {
	if p == nil || p.Properties == nil || p.Properties.RemoteVirtualNetwork == nil {
		return ""
	}
	return api.Str(p.Properties.RemoteVirtualNetwork.ID)
}

// keptPeerings are the peerings a PUT of the network keeps: the stored
// ones (a new network has none, listed as []).
func keptPeerings(cur *armnetwork.VirtualNetwork) []*armnetwork.VirtualNetworkPeering {
	if cur == nil || cur.Properties == nil || cur.Properties.VirtualNetworkPeerings == nil {
		return []*armnetwork.VirtualNetworkPeering{}
	}
	return cur.Properties.VirtualNetworkPeerings
}

// settlePeerings finishes the peerings with their network's operation:
// Succeeded, and the one named by a peering delete removed.
func settlePeerings(v *armnetwork.VirtualNetwork, removeChild string) {
	gone, _ := strings.CutPrefix(removeChild, peeringChildPfx)
	if gone == removeChild {
		gone = ""
	}
	kept := v.Properties.VirtualNetworkPeerings[:0]
	for _, p := range v.Properties.VirtualNetworkPeerings {
		if p == nil || gone != "" && strings.EqualFold(api.Str(p.Name), gone) {
			continue
		}
		if p.Properties != nil {
			p.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateSucceeded)
		}
		kept = append(kept, p)
	}
	v.Properties.VirtualNetworkPeerings = kept
}

// vnetSpace is a network's address space, parsed.
func vnetSpace(v *armnetwork.VirtualNetwork) []netip.Prefix {
	var out []netip.Prefix
	if v == nil || v.Properties == nil || v.Properties.AddressSpace == nil {
		return nil
	}
	for _, s := range v.Properties.AddressSpace.AddressPrefixes {
		if p, err := netip.ParsePrefix(api.Str(s)); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func SpaceOf(as *armnetwork.AddressSpace) []string {
	if as == nil {
		return nil
	}
	out := make([]string, 0, len(as.AddressPrefixes))
	for _, s := range as.AddressPrefixes {
		out = append(out, api.Str(s))
	}
	return out
}

// SameSpace compares two address spaces as sets of prefixes.
func SameSpace(a, b []string) bool {
	norm := func(s []string) []string {
		out := make([]string, 0, len(s))
		for _, v := range s {
			out = append(out, PrefixKey(v))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(norm(a), norm(b))
}

// loadVNet reads a network by ID: nil when it does not exist.
func loadVNet(tx *store.Txn, id string) (*armnetwork.VirtualNetwork, error) {
	row, err := tx.GetResourceForRead(api.Key(id))
	if err != nil || row == nil || row.Type != api.TypeVirtualNetworks {
		return nil, err
	}
	return decodeVNet(row.Doc)
}

// viewPeering fills what a peering's reader sees and the document does
// not keep: its state, its sync level and the remote's current address
// space. local is the peering's network, remote the remote network (nil
// when it does not exist).
func viewPeering(local *armnetwork.VirtualNetwork, p *armnetwork.VirtualNetworkPeering, remote *armnetwork.VirtualNetwork) {
	if p.Properties == nil {
		p.Properties = &armnetwork.VirtualNetworkPeeringPropertiesFormat{}
	}
	pp := p.Properties
	var back *armnetwork.VirtualNetworkPeering
	if remote != nil {
		for _, b := range remote.Properties.VirtualNetworkPeerings {
			if b != nil && armid.Same(PeeringRemote(b), api.Str(local.ID)) {
				back = b
			}
		}
	}
	stored := pp.PeeringState
	switch {
	case back != nil:
		pp.PeeringState = api.Ptr(armnetwork.VirtualNetworkPeeringStateConnected)
	case stored != nil && *stored != armnetwork.VirtualNetworkPeeringStateInitiated:
		// It was Connected: the other side is gone.
		pp.PeeringState = api.Ptr(armnetwork.VirtualNetworkPeeringStateDisconnected)
	default:
		pp.PeeringState = api.Ptr(armnetwork.VirtualNetworkPeeringStateInitiated)
	}
	level := armnetwork.VirtualNetworkPeeringLevelFullyInSync
	if remote != nil {
		current := SpaceOf(remote.Properties.AddressSpace)
		pp.RemoteVirtualNetworkAddressSpace = &armnetwork.AddressSpace{AddressPrefixes: ToStrPtrs(current)}
		remoteStale := !SameSpace(SpaceOf(pp.RemoteAddressSpace), current)
		localStale := back != nil && back.Properties != nil && !SameSpace(SpaceOf(back.Properties.RemoteAddressSpace), SpaceOf(local.Properties.AddressSpace))
		switch {
		case remoteStale && localStale:
			level = armnetwork.VirtualNetworkPeeringLevelLocalAndRemoteNotInSync
		case remoteStale:
			level = armnetwork.VirtualNetworkPeeringLevelRemoteNotInSync
		case localStale:
			level = armnetwork.VirtualNetworkPeeringLevelLocalNotInSync
		}
	}
	pp.PeeringSyncLevel = api.Ptr(level)
}

func ToStrPtrs(ss []string) []*string {
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = api.Ptr(ss[i])
	}
	return out
}

// renderVNetDoc is a network's document with its peerings viewed; a
// document without peerings is returned as it is.
func renderVNetDoc(tx *store.Txn, doc []byte) (json.RawMessage, error) {
	if !bytes.Contains(doc, []byte(`"virtualNetworkPeerings":[{`)) {
		return doc, nil
	}
	v, err := decodeVNet(doc)
	if err != nil {
		return nil, err
	}
	for _, p := range v.Properties.VirtualNetworkPeerings {
		if p == nil {
			continue
		}
		remote, err := loadVNet(tx, PeeringRemote(p))
		if err != nil {
			return nil, err
		}
		viewPeering(v, p, remote)
	}
	return api.Encode(v)
}

// putPeering creates or updates one side of a peering. Azure's checks:
// the remote network exists and is not this one, the address spaces do
// not overlap, one peering per remote network, and useRemoteGateways only
// on one peering of a network without a gateway of its own, towards a
// network that has one (unless doNotVerifyRemoteGateways). The remote
// address space is taken when the peering is created, and again when the
// PUT carries ?syncRemoteAddressSpace=true.
func (s *Provider) putPeering(ctx context.Context, q *api.Request) (*api.Response, error) {
	sync := strings.EqualFold(q.Query.Get("syncRemoteAddressSpace"), "true")
	var remoteRow *store.ResourceRow
	var remote *armnetwork.VirtualNetwork
	return s.put(ctx, q, &peeringPut{
		kind: &peeringKind, body: api.DecodeModel,
		build: func(p *peeringPut) (*armnetwork.VirtualNetworkPeering, error) {
			var err error
			if remoteRow, remote, err = peeringTarget(p.tx, p.row, p.id, p.in.Properties); err != nil {
				return nil, err
			}
			if err := checkPeering(p.tx, p.row, p.parent, remote, p.id, p.t.ChildName, p.in.Properties); err != nil {
				return nil, err
			}
			return buildPeering(p.id, p.etag, p.in.Properties, p.prev, remote, sync), nil
		},
		same: samePeering,
		commit: func(p *peeringPut, out *armnetwork.VirtualNetworkPeering) error {
			out.Properties.PeeringState = api.Ptr(armnetwork.VirtualNetworkPeeringStateInitiated)
			for _, b := range remote.Properties.VirtualNetworkPeerings {
				if b == nil || !armid.Same(PeeringRemote(b), p.row.ID) {
					continue
				}
				out.Properties.PeeringState = api.Ptr(armnetwork.VirtualNetworkPeeringStateConnected)
				if b.Properties != nil && (b.Properties.PeeringState == nil || *b.Properties.PeeringState != armnetwork.VirtualNetworkPeeringStateConnected) {
					// The other side becomes Connected now; remember it, so
					// that it shows Disconnected if this side goes away.
					b.Properties.PeeringState = api.Ptr(armnetwork.VirtualNetworkPeeringStateConnected)
					doc, err := api.Encode(remote)
					if err != nil {
						return err
					}
					remoteRow.Doc = doc // the remote network itself was not written: its etag stays
					if err := s.StoreRow(p.tx, remoteRow); err != nil {
						return err
					}
				}
			}
			return nil
		},
	})
}

// peeringTarget resolves and reads a peering's remote network.
func peeringTarget(tx *store.Txn, row *store.ResourceRow, peeringID string, p *armnetwork.VirtualNetworkPeeringPropertiesFormat) (*store.ResourceRow, *armnetwork.VirtualNetwork, error) {
	ref := ""
	if p != nil && p.RemoteVirtualNetwork != nil {
		ref = strings.TrimSpace(api.Str(p.RemoteVirtualNetwork.ID))
	}
	if ref == "" {
		return nil, nil, api.BadRequest("InvalidRequestFormat", "Cannot parse the request. Peering %s has no properties.remoteVirtualNetwork.id.", peeringID)
	}
	a, ok := api.ParseNetworkID(ref)
	if !ok || a.Type != api.TypeVirtualNetworks || a.Child != "" {
		return nil, nil, api.BadRequest("LinkedInvalidPropertyId",
			"Property id '%s' at path 'properties.remoteVirtualNetwork.id' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{subscriptionId}' or '/providers/{resourceProviderNamespace}/'.", ref)
	}
	if api.Key(a.ParentID()) == row.Key {
		return nil, nil, api.BadRequest("CannotPeerVirtualNetworkWithItself", "Virtual network %s cannot be peered with itself.", row.ID)
	}
	remoteRow, err := tx.GetResource(api.Key(a.ParentID()))
	if err != nil {
		return nil, nil, err
	}
	if remoteRow == nil {
		return nil, nil, api.InvalidReference(ref, peeringID)
	}
	remote, err := decodeVNet(remoteRow.Doc)
	if err != nil {
		return nil, nil, err
	}
	return remoteRow, remote, nil
}

// checkPeering applies Azure's rules between a peering, its network and
// the remote network.
func checkPeering(tx *store.Txn, row *store.ResourceRow, v, remote *armnetwork.VirtualNetwork, peeringID, name string, p *armnetwork.VirtualNetworkPeeringPropertiesFormat) error {
	for _, a := range vnetSpace(v) {
		for _, b := range vnetSpace(remote) {
			if a.Overlaps(b) {
				return api.BadRequest("VnetAddressSpacesOverlap",
					"Cannot create or update peering %s because address space %s of virtual network %s overlaps with address space %s of remote virtual network %s.",
					peeringID, a, api.Str(v.Name), b, api.Str(remote.Name))
			}
		}
	}
	useRemote := p.UseRemoteGateways != nil && *p.UseRemoteGateways
	for _, o := range v.Properties.VirtualNetworkPeerings {
		if o == nil || strings.EqualFold(api.Str(o.Name), name) {
			continue
		}
		if armid.Same(PeeringRemote(o), api.Str(remote.ID)) {
			return api.BadRequest("VnetPeeringAlreadyExists", "Virtual network %s already has peering %s to remote virtual network %s.", api.Str(v.Name), api.Str(o.Name), api.Str(remote.ID))
		}
		if useRemote && o.Properties != nil && o.Properties.UseRemoteGateways != nil && *o.Properties.UseRemoteGateways {
			return api.BadRequest("OnlyOnePeeringCanUseRemoteGateways",
				"Peering %s cannot use remote gateways: peering %s of virtual network %s already does.", peeringID, api.Str(o.Name), api.Str(v.Name))
		}
	}
	if !useRemote {
		return nil
	}
	own, err := gatewaysOfVNet(tx, row.ID)
	if err != nil {
		return err
	}
	if len(own) > 0 {
		return api.BadRequest("PeeringCannotUseRemoteGatewaysWhenLocalGatewayExists",
			"Peering %s cannot have UseRemoteGateways set because virtual network %s has gateway %s.", peeringID, api.Str(v.Name), api.Str(own[0].ID))
	}
	if p.DoNotVerifyRemoteGateways != nil && *p.DoNotVerifyRemoteGateways {
		return nil
	}
	theirs, err := gatewaysOfVNet(tx, api.Str(remote.ID))
	if err != nil {
		return err
	}
	if len(theirs) == 0 {
		return api.BadRequest("RemoteVnetHasNoGateways",
			"Virtual network peering %s cannot have UseRemoteGateways flag set to true because remote virtual network %s referenced by the peering does not have any gateways.",
			peeringID, api.Str(remote.ID))
	}
	return nil
}

// buildPeering is the peering as the network will hold it, with Azure's
// defaults (allowVirtualNetworkAccess true, the other flags false).
func buildPeering(id, etag string, in *armnetwork.VirtualNetworkPeeringPropertiesFormat, prev *armnetwork.VirtualNetworkPeering, remote *armnetwork.VirtualNetwork, sync bool) *armnetwork.VirtualNetworkPeering {
	flag := func(b *bool, def bool) *bool {
		if b == nil {
			return api.Ptr(def)
		}
		return api.Ptr(*b)
	}
	p := &armnetwork.VirtualNetworkPeeringPropertiesFormat{
		AllowVirtualNetworkAccess: flag(in.AllowVirtualNetworkAccess, true),
		AllowForwardedTraffic:     flag(in.AllowForwardedTraffic, false),
		AllowGatewayTransit:       flag(in.AllowGatewayTransit, false),
		UseRemoteGateways:         flag(in.UseRemoteGateways, false),
		DoNotVerifyRemoteGateways: in.DoNotVerifyRemoteGateways,
		RemoteVirtualNetwork:      &armnetwork.SubResource{ID: remote.ID},
		RemoteAddressSpace:        &armnetwork.AddressSpace{AddressPrefixes: ToStrPtrs(SpaceOf(remote.Properties.AddressSpace))},
		ProvisioningState:         api.Ptr(armnetwork.ProvisioningStateUpdating),
		ResourceGUID:              api.Ptr(uuid.NewString()),
	}
	if prev != nil && prev.Properties != nil {
		p.ResourceGUID = prev.Properties.ResourceGUID
		p.PeeringState = prev.Properties.PeeringState
		if !sync && prev.Properties.RemoteAddressSpace != nil {
			p.RemoteAddressSpace = prev.Properties.RemoteAddressSpace
		}
	}
	return &armnetwork.VirtualNetworkPeering{ID: api.Ptr(id), Name: api.Ptr(armid.Name(id)), Type: api.Ptr(ARMTypePeering), Etag: api.Ptr(etag), Properties: p}
}

// samePeering compares two peerings apart from etag and computed fields.
func samePeering(a, b *armnetwork.VirtualNetworkPeering) bool {
	strip := func(p *armnetwork.VirtualNetworkPeering) string {
		c := *p
		pp := *p.Properties
		pp.ProvisioningState, pp.PeeringState, pp.PeeringSyncLevel, pp.RemoteVirtualNetworkAddressSpace = nil, nil, nil, nil
		c.Properties, c.Etag = &pp, nil
		b, _ := json.Marshal(&c)
		return string(b)
	}
	return strip(a) == strip(b)
}
