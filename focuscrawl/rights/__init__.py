"""What a site owner says about a page or an image: opt-outs (robots directives, TDMRep,
robots.txt groups for AI crawlers) and rights (licence, creator, credit). Pure functions of
headers, markup and file metadata; the crawl's components apply them (docs/OPTOUTS.md)."""
