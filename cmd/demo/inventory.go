package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// inventoryAPI is a minimal client of the inventory service's HTTP API
// (docs/reference.md, "The inventory service"), reusing orderAPI's request
// helper: the demo stocks the SKUs and reads each order's reservation.
type inventoryAPI struct{ orderAPI }

// setStock sets what is available of sku (PUT /stock/{sku}).
func (a *inventoryAPI) setStock(ctx context.Context, sku string, available int) error {
	var out map[string]any
	return a.do(ctx, http.MethodPut, "/stock/"+sku, map[string]int{"available": available}, nil, &out)
}

// reservation is the status of the order's reservation: reserved, released
// (a release, or a tombstone), or none when the inventory holds none.
func (a *inventoryAPI) reservation(ctx context.Context, orderID string) (string, error) {
	var out struct {
		Status string `json:"status"`
	}
	err := a.do(ctx, http.MethodGet, "/reservations/"+orderID, nil, nil, &out)
	var nf *httpStatusError
	if errors.As(err, &nf) && nf.code == http.StatusNotFound {
		return "none", nil
	}
	if err != nil {
		return "", err
	}
	return out.Status, nil
}

// stockAll stocks every SKU of demoStock.
func (a *inventoryAPI) stockAll(ctx context.Context) (string, error) {
	var said []string
	for _, sku := range []string{"BOOK-DDIA", "STICKER-PG", soldOutSKU} {
		if err := a.setStock(ctx, sku, demoStock[sku]); err != nil {
			return "", fmt.Errorf("stock %s: %w", sku, err)
		}
		said = append(said, fmt.Sprintf("%s=%d", sku, demoStock[sku]))
	}
	return strings.Join(said, " "), nil
}
