"""Sample Scrapy project: an ordinary spider made a revisiting crawler by one add-on."""
