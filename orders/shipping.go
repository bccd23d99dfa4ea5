package orders

import (
	"embed"

	"github.com/outflow/outflow/internal/namedsql"
)

//go:embed shipping.sql
var shippingSQL embed.FS

// shippingQueries are the statements that write orders.shipping_address.
var shippingQueries = namedsql.MustLoad(shippingSQL, "shipping.sql")
