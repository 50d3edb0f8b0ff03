//go:build !linux

package peer

import "errors"

// errChaosLinuxOnly: telling a dead marker owner from a live one needs
// /proc and pidfds.
var errChaosLinuxOnly = errors.New("peer: chaos runs on linux only")

func selfMarker() (markerID, error) { return markerID{}, errChaosLinuxOnly }

func markerOwnerGone(markerID) (bool, error) { return false, errChaosLinuxOnly }
